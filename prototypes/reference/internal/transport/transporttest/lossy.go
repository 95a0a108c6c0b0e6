package transporttest

// A lossy UDP relay and a connect check on top of it: many players connect through
// a path that drops the players' datagrams (the up direction, as the harness's
// turbulent network profile does) and each must get one reliable round trip done
// within its connect budget, as a player's connect plus hello/welcome must.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"netstick/prototypes/reference/internal/transport"
)

// Drop decides whether the relay drops a player's datagram on its way to the server:
// player numbers players in order of their first datagram, seq numbers each player's
// datagrams from 0, and elapsed is the time since the relay started. The relay calls
// it from one goroutine.
type Drop func(player, seq int, elapsed time.Duration) bool

// CorrelatedLoss drops with rate p and lag-1 correlation c between successive
// decisions, one chain for all players' datagrams like the harness's emulator (netemu)
// keeps one per direction: P(lose | last lost) = p + c(1-p), P(lose | last kept) =
// p(1-c). Seeded, so the decisions in arrival order are the same every run.
func CorrelatedLoss(p, c float64, seed uint64) Drop {
	r := rand.New(rand.NewPCG(seed, 1))
	lastLost := false
	return func(_, _ int, _ time.Duration) bool {
		q := p
		if c > 0 {
			if lastLost {
				q = p + c*(1-p)
			} else {
				q = p * (1 - c)
			}
		}
		lastLost = r.Float64() < q
		return lastLost
	}
}

// DropSeq drops each player's datagrams number seqs (from 0) and lets all others through.
func DropSeq(seqs ...int) Drop {
	return func(_, seq int, _ time.Duration) bool { return slices.Contains(seqs, seq) }
}

// Blackout drops every datagram sent before the relay has run for d.
func Blackout(d time.Duration) Drop {
	return func(_, _ int, elapsed time.Duration) bool { return elapsed < d }
}

// BlackoutAfterFirst lets each player's first datagram through and drops the next
// ones until d after it.
func BlackoutAfterFirst(d time.Duration) Drop {
	first := map[int]time.Duration{}
	return func(player, seq int, elapsed time.Duration) bool {
		if seq == 0 {
			first[player] = elapsed
			return false
		}
		return elapsed-first[player] < d
	}
}

// Relay forwards UDP datagrams between players and one server. Each player (source
// address) gets its own upstream socket, so the server sees one address per player.
// Up datagrams (player to server) are dropped as drop decides; both directions are
// delayed by oneWay. Down datagrams are never dropped.
type Relay struct {
	Addr string // players dial this

	drop    Drop
	oneWay  time.Duration
	start   time.Time
	server  *net.UDPAddr
	ln      *net.UDPConn
	mu      sync.Mutex
	players map[string]*relayPlayer
	closed  atomic.Bool
	wg      sync.WaitGroup

	upIn, upDropped atomic.Int64
}

type relayPlayer struct {
	up       *net.UDPConn
	num, seq int // used by the relay's one reading goroutine only
}

// NewRelay starts a relay in front of server (host:port, UDP); it stops at the test's
// end.
func NewRelay(t testing.TB, server string, drop Drop, oneWay time.Duration) *Relay {
	t.Helper()
	sa, err := net.ResolveUDPAddr("udp4", server)
	if err != nil {
		t.Fatalf("relay: server address %q: %v", server, err)
	}
	ln, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatalf("relay: listen: %v", err)
	}
	r := &Relay{Addr: ln.LocalAddr().String(), drop: drop, oneWay: oneWay, start: time.Now(), server: sa, ln: ln,
		players: map[string]*relayPlayer{}}
	r.wg.Go(r.readPlayers)
	t.Cleanup(r.close)
	return r
}

// Stats returns the up datagrams seen and dropped so far.
func (r *Relay) Stats() (in, dropped int64) { return r.upIn.Load(), r.upDropped.Load() }

func (r *Relay) close() {
	r.closed.Store(true)
	_ = r.ln.Close()
	r.mu.Lock()
	for _, p := range r.players {
		_ = p.up.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// later runs f after the one-way delay (at once without one). Datagrams of one
// direction keep their order: equal delays fire in order closely enough for a test,
// and a reordering would only make the path harsher.
func (r *Relay) later(f func()) {
	if r.oneWay <= 0 {
		f()
		return
	}
	time.AfterFunc(r.oneWay, f)
}

func (r *Relay) readPlayers() {
	buf := make([]byte, 65536)
	for {
		n, from, err := r.ln.ReadFromUDP(buf)
		if err != nil {
			if r.closed.Load() {
				return
			}
			continue
		}
		p := r.player(from)
		if p == nil {
			continue
		}
		r.upIn.Add(1)
		seq := p.seq
		p.seq++
		if r.drop(p.num, seq, time.Since(r.start)) {
			r.upDropped.Add(1)
			continue
		}
		msg := append([]byte(nil), buf[:n]...)
		r.later(func() { _, _ = p.up.Write(msg) })
	}
}

// player returns the upstream of a player, creating it on its first datagram.
func (r *Relay) player(from *net.UDPAddr) *relayPlayer {
	key := from.String()
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.players[key]; p != nil {
		return p
	}
	if r.closed.Load() {
		return nil
	}
	up, err := net.DialUDP("udp4", nil, r.server)
	if err != nil {
		return nil
	}
	p := &relayPlayer{up: up, num: len(r.players)}
	r.players[key] = p
	back := *from
	r.wg.Go(func() {
		buf := make([]byte, 65536)
		for {
			n, err := up.Read(buf)
			if err != nil {
				if r.closed.Load() || errors.Is(err, net.ErrClosed) {
					return
				}
				continue // an ICMP error from the server side: keep relaying
			}
			msg := append([]byte(nil), buf[:n]...)
			r.later(func() { _, _ = r.ln.WriteToUDP(msg, &back) })
		}
	})
	return p
}

// ConnectResult is what ConnectThroughLoss measured.
type ConnectResult struct {
	Players  int
	Failed   int     // players without a round trip within the budget
	Errors   []error // one per failed player
	Slowest  time.Duration
	UpIn     int64 // datagrams the players sent
	UpLost   int64 // of which the relay dropped
	Duration time.Duration
}

// ConnectThroughLoss starts an echo server on tr, puts a Relay with drop and the
// one-way delay in front of it, and has players players connect through it at once,
// each with a budget: Dial with a context of that budget, then one reliable message
// that must come back before the budget ends, like a player's connect and its
// hello/welcome. It counts the players that did not make it.
func ConnectThroughLoss(t *testing.T, tr transport.Transport, players int, drop Drop, oneWay, budget time.Duration) ConnectResult {
	t.Helper()
	srv := &Recorder{Echo: true}
	_, addr := Listen(t, tr, srv)
	relay := NewRelay(t, addr, drop, oneWay)
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	res := ConnectResult{Players: players}
	for i := range players {
		wg.Go(func() {
			began := time.Now()
			err := connectAndEcho(tr, relay.Addr, i, budget)
			took := time.Since(began)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.Failed++
				res.Errors = append(res.Errors, fmt.Errorf("player %d after %v: %w", i, took.Round(time.Millisecond), err))
			} else if took > res.Slowest {
				res.Slowest = took
			}
		})
	}
	wg.Wait()
	res.Duration = time.Since(start)
	res.UpIn, res.UpLost = relay.Stats()
	return res
}

func connectAndEcho(tr transport.Transport, addr string, player int, budget time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	col := &Recorder{}
	c, err := tr.Dial(ctx, addr, col)
	if err != nil {
		return err
	}
	defer c.Close()
	msg := payload(player, 0, 32)
	// Repeated like the client's hello where the transport may lose it (udp's reliable
	// channel is best effort).
	var resend <-chan time.Time
	if !tr.Caps().NativeReliable {
		t := time.NewTicker(helloRetry)
		defer t.Stop()
		resend = t.C
	}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for send := true; ; {
		if send {
			if err := c.Send(transport.Reliable, msg); err != nil {
				return fmt.Errorf("send: %w", err)
			}
			send = false
		}
		if col.Count(transport.Reliable) > 0 {
			return nil
		}
		select {
		case err := <-col.Reasons():
			return fmt.Errorf("connection lost before the echo: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("no echo: %w", ctx.Err())
		case <-resend:
			send = true
		case <-tick.C:
		}
	}
}

// helloRetry is the client's interval between hellos until the welcome arrives.
const helloRetry = 250 * time.Millisecond
