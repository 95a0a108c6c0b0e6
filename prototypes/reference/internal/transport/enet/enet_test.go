//go:build linux && cgo

package enet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/transport/transporttest"
)

func newT(t *testing.T, opts transport.Options) transport.Transport {
	return transporttest.New(t, "enet", opts)
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, "enet", nil)
}

func TestRegistered(t *testing.T) {
	tr := transporttest.New(t, "enet", transport.Options{"max_peers": "64", "throttle": "false"})
	if c := tr.Caps(); !c.NativeReliable || !c.NativeUnreliable || c.MaxReliableBytes != 16<<20 || c.MaxUnreliableBytes != 64<<10 {
		t.Fatalf("caps %+v", c)
	}
}

func TestOptionErrorsNameTheKey(t *testing.T) {
	transporttest.OptionErrorsNameTheKey(t, "enet", [][2]string{
		{"max_peers", "4096"}, {"max_peers", "0"}, {"sockbuf", "-1"}, {"timeout_ms", "abc"},
		{"timeout_ms", "50"}, {"linger_ms", "x"}, {"throttle", "maybe"}, {"merged_acks", "yes please"},
		{"seed_rtt", "2"}, {"hurry_verify", "?"}, {"bogus", "1"},
	})
	tr := newT(t, transport.Options{"max_peers": "4095", "sockbuf": "0", "timeout_ms": "1000", "linger_ms": "0", "throttle": "false"}).(*Transport)
	if tr.maxPeers != 4095 || tr.sockbuf != 0 || tr.timeoutMS != 1000 || tr.linger != 0 || tr.throttle {
		t.Fatalf("options not applied: %+v", tr)
	}
}

func TestMessagesAndLibRTT(t *testing.T) {
	tr := newT(t, nil)
	srv := &transporttest.Recorder{Echo: true}
	ln, err := tr.Listen("127.0.0.1:0", srv) // the listener must report the port it got
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	if !strings.HasPrefix(ln.Addr(), "127.0.0.1:") || strings.HasSuffix(ln.Addr(), ":0") {
		t.Fatalf("listener address %q", ln.Addr())
	}
	s := &transporttest.Recorder{}
	c := transporttest.Dial(t, tr, ln.Addr(), s)
	if _, ok := c.(transport.RTTEstimator).LibRTT(); !ok {
		t.Fatal("client LibRTT unknown right after connect")
	}
	// Empty messages, and an unreliable message of 15 ENet fragments.
	big := bytes.Repeat([]byte("0123456789"), 2000)
	for _, m := range [][]byte{{}, []byte("x")} {
		if err := c.Send(transport.Reliable, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Send(transport.Unreliable, big); err != nil {
		t.Fatal(err)
	}
	transporttest.WaitFor(t, "echoes", 5*time.Second, func() bool { return s.Count(transport.Reliable) == 2 && s.Count(transport.Unreliable) == 1 })
	rel, unrel := s.Messages(transport.Reliable), s.Messages(transport.Unreliable)
	if len(rel[0]) != 0 || string(rel[1]) != "x" || !bytes.Equal(unrel[0], big) {
		t.Fatal("echo mismatch")
	}
	for i := range 50 {
		_ = c.Send(transport.Reliable, []byte{byte(i)})
	}
	transporttest.WaitFor(t, "reliable echoes", 5*time.Second, func() bool { return s.Count(transport.Reliable) == 52 })
	time.Sleep(150 * time.Millisecond) // one LibRTT refresh
	rtt, ok := c.(transport.RTTEstimator).LibRTT()
	sc := <-srv.Conns()
	srtt, sok := sc.(transport.RTTEstimator).LibRTT()
	remote := sc.RemoteAddr()
	t.Logf("LibRTT client %v server %v (ms resolution); server sees %s", rtt, srtt, remote)
	if !ok || !sok || rtt < time.Millisecond || rtt > 600*time.Millisecond || srtt < time.Millisecond {
		t.Fatalf("LibRTT client %v %v server %v %v", rtt, ok, srtt, sok)
	}
	if !strings.HasPrefix(remote, "127.0.0.1:") {
		t.Fatalf("server RemoteAddr %q", remote)
	}
}

func TestTooLarge(t *testing.T) {
	tr := newT(t, nil)
	_, addr := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	c := transporttest.Dial(t, tr, addr, &transporttest.Recorder{})
	if err := c.Send(transport.Unreliable, make([]byte, 64<<10+1)); !errors.Is(err, transport.ErrTooLarge) {
		t.Fatalf("unreliable 64 KiB+1: %v", err)
	}
	if err := c.Send(transport.Reliable, make([]byte, 16<<20+1)); !errors.Is(err, transport.ErrTooLarge) {
		t.Fatalf("reliable 16 MiB+1: %v", err)
	}
	if err := c.Send(transport.Channel(7), []byte("x")); err == nil {
		t.Fatal("unknown channel accepted")
	}
}

func TestBigReliableBurst(t *testing.T) {
	tr := newT(t, nil)
	_, addr := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	s := &transporttest.Recorder{}
	c := transporttest.Dial(t, tr, addr, s)
	const n, size = 64, 64 << 10 // a 4 MiB snapshot burst
	for i := range n {
		m := bytes.Repeat([]byte{byte(i)}, size)
		if err := c.Send(transport.Reliable, m); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	transporttest.WaitFor(t, "burst echo", 5*time.Second, func() bool { return s.Count(transport.Reliable) == n })
	t.Logf("4 MiB reliable burst echoed in %v", time.Since(start))
	for i, m := range s.Messages(transport.Reliable) {
		if len(m) != size || m[0] != byte(i) || m[size-1] != byte(i) {
			t.Fatalf("message %d corrupted or out of order", i)
		}
	}
}

func TestDialCancelled(t *testing.T) {
	tr := newT(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := tr.Dial(ctx, transporttest.FreeAddr(t), &transporttest.Recorder{})
	if !errors.Is(err, transport.ErrConnect) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("cancelled dial took %v", d)
	}
}

func TestCloseInsideHandler(t *testing.T) {
	tr := newT(t, nil)
	srv := &transporttest.Recorder{Echo: true}
	_, addr := transporttest.Listen(t, tr, srv)
	s := &transporttest.Recorder{}
	s.OnReceive = func(c transport.Conn, _ transport.Channel, _ []byte) { _ = c.Close() } // must not deadlock
	c := transporttest.Dial(t, tr, addr, s)
	if err := c.Send(transport.Reliable, []byte("bye")); err != nil {
		t.Fatal(err)
	}
	if err := s.NextReason(t, "client after Close inside Received", 5*time.Second); err != nil {
		t.Fatalf("local close reported %v", err)
	}
	transporttest.WaitFor(t, "server disconnect", 5*time.Second, func() bool { return srv.NumDisconnected() == 1 })
	if err := c.Send(transport.Reliable, []byte("x")); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
}

func TestServerSideClose(t *testing.T) {
	tr := newT(t, nil)
	srv := &transporttest.Recorder{Echo: true}
	_, addr := transporttest.Listen(t, tr, srv)
	s := &transporttest.Recorder{}
	_ = transporttest.Dial(t, tr, addr, s)
	transporttest.WaitFor(t, "connection", 5*time.Second, func() bool { return srv.NumConnected() == 1 })
	sc := <-srv.Conns()
	_ = sc.Close()
	if err := s.NextReason(t, "client", 5*time.Second); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("client got %v, want peer closed", err)
	}
	// The server's Disconnected comes from its own host loop once ENet acknowledged the
	// disconnect (or linger_ms ran out): after the client's, not before it.
	transporttest.WaitFor(t, "server Disconnected", 5*time.Second, func() bool { return srv.NumDisconnected() >= 1 })
	time.Sleep(50 * time.Millisecond)
	if srv.NumDisconnected() != 1 {
		t.Fatalf("server Disconnected calls: %d", srv.NumDisconnected())
	}
	if err := sc.Send(transport.Reliable, []byte("x")); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
}

// TestManyPlayersUnreliableEcho is the game's probe pattern: 100 players, 60 Hz,
// 100 B unreliable, echoed by one server host, for 2 s.
func TestManyPlayersUnreliableEcho(t *testing.T) {
	const players, hz, size, dur = 100, 60, 100, 2 * time.Second
	before := runtime.NumGoroutine()
	tr := newT(t, nil)
	srv := &transporttest.Recorder{Echo: true}
	ln, err := tr.Listen("127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now()
	var mu sync.Mutex
	var rtts []time.Duration
	var sent atomic.Int64
	conns := make([]transport.Conn, players)
	for i := range players {
		s := &transporttest.Recorder{}
		s.OnReceive = func(_ transport.Conn, _ transport.Channel, msg []byte) {
			if len(msg) != size {
				return
			}
			d := time.Since(base) - time.Duration(binary.LittleEndian.Uint64(msg))
			mu.Lock()
			rtts = append(rtts, d)
			mu.Unlock()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conns[i], err = tr.Dial(ctx, ln.Addr(), s)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	transporttest.WaitFor(t, "all players connected", 5*time.Second, func() bool { return srv.NumConnected() == players })
	var wg sync.WaitGroup
	stop := time.Now().Add(dur)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Random-ish phase per player, as in the game.
			time.Sleep(time.Duration(i) * time.Second / hz / players)
			tk := time.NewTicker(time.Second / hz)
			defer tk.Stop()
			msg := make([]byte, size)
			for now := range tk.C {
				if now.After(stop) {
					return
				}
				binary.LittleEndian.PutUint64(msg, uint64(time.Since(base)))
				if err := c.Send(transport.Unreliable, msg); err != nil {
					t.Errorf("send: %v", err)
					return
				}
				sent.Add(1)
			}
		}()
	}
	wg.Wait()
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	got := slices.Clone(rtts)
	mu.Unlock()
	if len(got) < int(sent.Load())*9/10 {
		t.Fatalf("%d of %d echoes", len(got), sent.Load())
	}
	slices.Sort(got)
	p50, p99 := got[len(got)/2], got[len(got)*99/100]
	t.Logf("%d players: %d sent, %d echoed, RTT p50 %v p99 %v max %v", players, sent.Load(), len(got), p50, p99, got[len(got)-1])
	if p50 > 5*time.Millisecond {
		t.Fatalf("RTT p50 %v, want < 5 ms", p50)
	}
	for _, c := range conns {
		_ = c.Close()
	}
	transporttest.WaitFor(t, "server to see every disconnect", 5*time.Second, func() bool { return srv.NumDisconnected() == players })
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	transporttest.WaitFor(t, "goroutines to end", 5*time.Second, func() bool { return runtime.NumGoroutine() <= before+2 })
}

func ExampleNew() {
	tr, err := New(transport.Options{"timeout_ms": "5000"})
	fmt.Println(tr.Name(), err)
	// Output: enet <nil>
}

// stall blocks the server's host goroutine inside Received until released, so the
// server stops acknowledging as if it had vanished.
type stall struct {
	transporttest.Recorder
	release chan struct{}
}

func (s *stall) Received(c transport.Conn, ch transport.Channel, msg []byte) {
	if string(msg) == "stall" {
		<-s.release
		return
	}
	s.Recorder.Received(c, ch, msg)
}

// A server that stops acknowledging right after the connect is noticed after
// timeout_ms once the dial's connect budget is over (until then the client waits for
// its first messages' acknowledgements: client.budgetTimeoutMS).
func TestVanishedPeerTimesOut(t *testing.T) {
	tr := newT(t, transport.Options{"timeout_ms": "500", "throttle": "false"})
	srv := &stall{Recorder: transporttest.Recorder{Echo: true}, release: make(chan struct{})}
	_, addr := transporttest.Listen(t, tr, srv)
	defer close(srv.release) // before the listener's Close (a cleanup) runs
	s := &transporttest.Recorder{}
	const budget = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	start := time.Now()
	c, err := tr.Dial(ctx, addr, s)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send(transport.Reliable, []byte("stall")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.Reasons():
		took := time.Since(start)
		t.Logf("client gave up after %v: %v", took, err)
		if err == nil || !strings.Contains(err.Error(), "timed out") {
			t.Fatalf("want a timeout error, got %v", err)
		}
		if took < budget {
			t.Fatalf("client gave up after %v, within its connect budget of %v", took, budget)
		}
	case <-time.After(budget + 5*time.Second):
		t.Fatal("client did not notice the silent server within 5 s of its connect budget (timeout_ms=500)")
	}
}

// TestGarbageDatagrams sprays malformed datagrams at the server; ENet must drop them
// and keep serving.
func TestGarbageDatagrams(t *testing.T) {
	tr := newT(t, nil)
	srv := &transporttest.Recorder{Echo: true}
	_, addr := transporttest.Listen(t, tr, srv)
	s := &transporttest.Recorder{}
	c := transporttest.Dial(t, tr, addr, s)
	raddr, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	u, err := net.DialUDP("udp4", nil, raddr)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	rnd := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1500)
	for i := range 3000 {
		n := rnd.IntN(len(buf))
		for j := range buf[:n] {
			buf[j] = byte(rnd.Uint32())
		}
		if n >= 4 && i%3 == 0 {
			// Header of a plausible peer: peer ID 0, "sent time" flag, then commands.
			buf[0], buf[1] = 0x80, 0
		}
		_, _ = u.Write(buf[:n])
	}
	if err := c.Send(transport.Reliable, []byte("still alive")); err != nil {
		t.Fatal(err)
	}
	transporttest.WaitFor(t, "echo after garbage", 5*time.Second, func() bool { return s.Count(transport.Reliable) == 1 })
	if n := srv.NumConnected(); n != 1 {
		t.Logf("server saw %d connections (garbage can look like a connect)", n)
	}
}

func TestListenerCloseReportsAll(t *testing.T) {
	tr := newT(t, nil)
	srv := &transporttest.Recorder{Echo: true}
	ln, err := tr.Listen("127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	sinks := make([]*transporttest.Recorder, 5)
	for i := range sinks {
		sinks[i] = &transporttest.Recorder{}
		_ = transporttest.Dial(t, tr, ln.Addr(), sinks[i])
	}
	transporttest.WaitFor(t, "connections", 5*time.Second, func() bool { return srv.NumConnected() == 5 })
	_ = ln.Close()
	if d := srv.NumDisconnected(); d != 5 {
		t.Fatalf("Listener.Close returned after %d of 5 Disconnected calls", d)
	}
	for i, s := range sinks {
		if err := s.NextReason(t, fmt.Sprintf("client %d", i), 5*time.Second); err == nil || !strings.Contains(err.Error(), "shut down") {
			t.Fatalf("client %d: %v", i, err)
		}
	}
}

// sentDatagrams reads ENet's count of datagrams a host sent.
func sentDatagrams(h *host) uint32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return uint32(h.h.totalSentPackets)
}

// mergedAcks and fastConnect are the options the manifest's variants set
// (prototype.yaml: enet+merged-acks, enet+fast-connect, enet+tuned).
var (
	mergedAcks  = transport.Options{"merged_acks": "true"}
	fastConnect = transport.Options{"seed_rtt": "true", "hurry_verify": "true"}
	tuned       = transport.Options{"merged_acks": "true", "seed_rtt": "true", "hurry_verify": "true"}
)

// echoDatagrams runs a ping-pong of reliable 100-byte messages (the next one sent from
// the client's receive event of the echo, as the pingpong workload does) and returns
// the datagrams the server and the client sent per exchange between the 100th and the
// 300th echo.
func echoDatagrams(t *testing.T, opts transport.Options) (server, client float64) {
	t.Helper()
	tr := newT(t, opts)
	ln, addr := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	l := ln.(*listener)
	p := &counter{pinger: pinger{done: make(chan struct{})}, server: l.h, at: map[int64][2]uint32{}}
	p.left.Store(300)
	c := transporttest.Dial(t, tr, addr, p)
	p.client = c.(*conn).h
	if err := c.Send(transport.Reliable, bytes.Repeat([]byte{'x'}, 100)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("stuck with %d of 300 echoes left", p.left.Load())
	}
	a, b := p.at[200], p.at[0] // echoes left: 200 after the 100th, 0 after the 300th
	return float64(b[0]-a[0]) / 200, float64(b[1]-a[1]) / 200
}

// counter is a pinger that notes both hosts' datagram counts at each echo.
type counter struct {
	pinger
	server, client *host
	at             map[int64][2]uint32 // echoes left -> datagrams sent by server, client
}

func (p *counter) Received(c transport.Conn, ch transport.Channel, msg []byte) {
	p.at[p.left.Load()-1] = [2]uint32{sentDatagrams(p.server), sentDatagrams(p.client)}
	p.pinger.Received(c, ch, msg)
}

// libenetDatagrams runs the same ping-pong with stock libenet in ENet's own example
// loop (testdata/stockecho.c, built here with the system's C compiler).
func libenetDatagrams(t *testing.T) (server, client float64) {
	t.Helper()
	bin := t.TempDir() + "/stockecho"
	flags, err := exec.Command("pkg-config", "--cflags", "--libs", "libenet").Output()
	if err != nil {
		t.Fatalf("pkg-config libenet: %v", err)
	}
	args := append([]string{"-O2", "-o", bin, "testdata/stockecho.c"}, strings.Fields(string(flags))...)
	if out, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
		t.Fatalf("cc stockecho.c: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "100", "300").Output()
	if err != nil {
		t.Fatalf("stockecho: %v", err)
	}
	var counts [2][2]float64
	for i, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var echo int
		if _, err := fmt.Sscanf(line, "echo %d server %g client %g", &echo, &counts[i][0], &counts[i][1]); err != nil || i > 1 {
			t.Fatalf("stockecho printed %q", out)
		}
	}
	return (counts[1][0] - counts[0][0]) / 200, (counts[1][1] - counts[0][1]) / 200
}

// The stock binding sends ENet's acknowledgements as libenet does: an echo exchange
// costs each side as many datagrams as stock libenet in ENet's own example loop (an
// acknowledgement and a message each: 2), and no callback is installed into ENet.
// merged-acks sends each acknowledgement with the answer: about one datagram a side.
func TestStockSendsAsLibenet(t *testing.T) {
	libS, libC := libenetDatagrams(t)
	stockS, stockC := echoDatagrams(t, nil)
	mergedS, mergedC := echoDatagrams(t, mergedAcks)
	t.Logf("datagrams per echo exchange, server/client: libenet %.2f/%.2f, stock %.2f/%.2f, merged-acks %.2f/%.2f",
		libS, libC, stockS, stockC, mergedS, mergedC)
	if libS < 1.9 || libC < 1.9 {
		t.Fatalf("stock libenet sent %.2f/%.2f datagrams per exchange, want 2 (ack and message)", libS, libC)
	}
	if d := max(stockS-libS, libS-stockS, stockC-libC, libC-stockC); d > 0.05 {
		t.Fatalf("stock binding %.2f/%.2f datagrams per exchange, libenet %.2f/%.2f", stockS, stockC, libS, libC)
	}
	if mergedS > 1.2 || mergedC > 1.2 {
		t.Fatalf("merged-acks %.2f/%.2f datagrams per exchange: acknowledgements travel alone", mergedS, mergedC)
	}
}

// The stock binding's C code (nsenet.c) calls libenet and reads its public structures but
// never writes them: every assignment through a pointer is to the binding's own ns_event
// records. Writes into ENet's structures are the variants' (nstuned.c).
func TestStockWritesNoENetStructure(t *testing.T) {
	src, err := os.ReadFile("nsenet.c")
	if err != nil {
		t.Fatal(err)
	}
	write := regexp.MustCompile(`(\w+)(->|\[\w+\]\.)(\w+)\s*(=[^=]|\+=|-=|\|=|&=|\+\+|--)`)
	own := map[string]bool{"o": true, "evs": true}
	for i, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "//") {
			continue
		}
		for _, m := range write.FindAllStringSubmatch(line, -1) {
			if !own[m[1]] {
				t.Errorf("nsenet.c:%d writes %s%s%s: the stock binding must not change libenet's state", i+1, m[1], m[2], m[3])
			}
		}
	}
	tuned, err := os.ReadFile("nstuned.c")
	if err != nil || !write.Match(tuned) {
		t.Fatalf("the check finds no write in nstuned.c either (err %v): it checks nothing", err)
	}
}

// Only a variant's tuning installs ENet's intercept callback.
func TestStockInstallsNoCallback(t *testing.T) {
	for _, tc := range []struct {
		opts transport.Options
		want bool
	}{{nil, false}, {transport.Options{"throttle": "false"}, false}, {mergedAcks, true}, {fastConnect, true}} {
		ln, _ := transporttest.Listen(t, newT(t, tc.opts), &transporttest.Recorder{})
		if got := ln.(*listener).h.intercepted(); got != tc.want {
			t.Errorf("options %v: intercept callback installed %v, want %v", tc.opts, got, tc.want)
		}
	}
}

// pinger answers every echo with the next message from inside Received, on the client
// host goroutine (as the pingpong workload does), until left reaches 0.
type pinger struct {
	left atomic.Int64
	done chan struct{}
}

func (p *pinger) Connected(transport.Conn) {}
func (p *pinger) Received(c transport.Conn, ch transport.Channel, msg []byte) {
	if p.left.Add(-1) == 0 {
		close(p.done)
		return
	}
	_ = c.Send(ch, msg)
}
func (p *pinger) Disconnected(transport.Conn, error) {}

func TestSendFromHandlers(t *testing.T) {
	tr := newT(t, nil)
	_, addr := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	for _, ch := range []transport.Channel{transport.Reliable, transport.Unreliable} {
		p := &pinger{done: make(chan struct{})}
		const n = 2000
		p.left.Store(n)
		c := transporttest.Dial(t, tr, addr, p)
		start := time.Now()
		if err := c.Send(ch, []byte("ping")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.done:
			t.Logf("%v: %d round trips in %v", ch, n, time.Since(start))
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: stuck with %d of %d round trips left", ch, p.left.Load(), n)
		}
		_ = c.Close()
	}
}

// TestSendArmsRetransmitTimer checks that a Send on a dialled connection, which
// flushes from the caller's goroutine, moves the sleeping host goroutine's wake-up to
// ENet's retransmission timer for the message.
func TestSendArmsRetransmitTimer(t *testing.T) {
	tr := newT(t, nil)
	ln, _ := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	c := transporttest.Dial(t, tr, ln.Addr(), &transporttest.Recorder{})
	cc, l := c.(*conn), ln.(*listener)
	time.Sleep(100 * time.Millisecond) // nothing in flight: the client host sleeps long
	// Hold the server's host lock so that nothing is acknowledged meanwhile.
	l.h.mu.Lock()
	err := c.Send(transport.Reliable, []byte("x"))
	sent := time.Now()
	cc.h.mu.Lock()
	rto := time.Duration(cc.peer.nextTimeout-cc.h.h.serviceTime) * time.Millisecond
	inFlight := cc.peer.sentReliableCommands.sentinel.next != &cc.peer.sentReliableCommands.sentinel
	deadline, armed, awake := cc.h.deadline, cc.h.armed, cc.h.awake
	cc.h.mu.Unlock()
	l.h.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if !inFlight {
		t.Fatal("the reliable message is not in flight after Send")
	}
	t.Logf("retransmission timeout %v; host deadline in %v (awake %v)", rto, deadline.Sub(sent), awake)
	if deadline.After(sent.Add(rto + 2*time.Millisecond)) {
		t.Fatalf("host deadline %v after Send, later than ENet's retransmission timer %v", deadline.Sub(sent), rto)
	}
	if !awake && !armed.Equal(deadline) {
		t.Fatalf("sleeping host armed for %v, deadline %v", armed.Sub(sent), deadline.Sub(sent))
	}
}
