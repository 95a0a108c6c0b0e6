package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"netstick/prototypes/reference/internal/config"
	"netstick/prototypes/reference/internal/logs"
	"netstick/prototypes/reference/internal/sched"
	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/wire"
)

// ErrServerLost: the server went away during the run (exit code 5).
var ErrServerLost = errors.New("connection to the server lost")

// ErrConnectFailed: a player could not connect (exit code 4).
var ErrConnectFailed = errors.New("player could not connect")

// drainNs: after the workload stops, wait at most this long for echoes in flight.
const drainNs = int64(time.Second)

// Logs are the client's log files.
type Logs struct {
	RTT    *logs.File
	Events *logs.File
}

// Client drives the players of one client process.
type Client struct {
	cfg     config.Config
	tr      transport.Transport
	logs    Logs
	stdout  io.Writer
	disp    sched.Dispatcher
	players []*player

	stopping  atomic.Bool
	lost      chan error
	lostOnce  sync.Once
	malformed atomic.Int64
	malErr    atomic.Value
}

// New builds a client.
func New(cfg config.Config, tr transport.Transport, l Logs, stdout io.Writer) *Client {
	c := &Client{cfg: cfg, tr: tr, logs: l, stdout: stdout, lost: make(chan error, 1)}
	c.disp.CoalesceNs = cfg.SendSlack.Nanoseconds()
	return c
}

func nowUnix() int64 { return time.Now().UnixNano() }

func (c *Client) event(player int64, name, value, detail string) {
	c.logs.Events.Event(player, name, value, detail)
}

func (c *Client) rttRow(tUnix int64, player, seq uint32, rttNs int64, kind string, lateNs int64) {
	c.logs.RTT.Row(func(b []byte) []byte {
		b = strconv.AppendInt(b, tUnix, 10)
		b = append(b, ',')
		b = strconv.AppendUint(b, uint64(player), 10)
		b = append(b, ',')
		b = strconv.AppendUint(b, uint64(seq), 10)
		b = append(b, ',')
		b = strconv.AppendFloat(b, float64(rttNs)/1e3, 'f', 3, 64)
		b = append(b, ',')
		b = append(b, kind...)
		b = append(b, ',')
		if lateNs >= 0 {
			b = strconv.AppendFloat(b, float64(lateNs)/1e3, 'f', 3, 64)
		}
		return b
	})
}

func (c *Client) dropMalformed(err error) {
	if c.malformed.Add(1) == 1 {
		c.malErr.Store(err.Error())
	}
}

func (c *Client) flushMalformed() {
	if n := c.malformed.Swap(0); n > 0 {
		first, _ := c.malErr.Load().(string)
		c.event(-1, "malformed", strconv.FormatInt(n, 10), "error="+logs.Sanitize(first))
	}
}

func (c *Client) playerDisconnected(p *player, err error) {
	if c.stopping.Load() {
		return
	}
	if err == nil {
		err = errors.New("closed")
	}
	c.event(int64(p.id), "disconnect", "", "reason="+logs.Sanitize(err.Error()))
	c.lostOnce.Do(func() { c.lost <- fmt.Errorf("player %d: %w: %w", p.id, ErrServerLost, err) })
}

// connect connects all players, staggered, with bounded handshakes in flight.
func (c *Client) connect(ctx context.Context) error {
	n := c.cfg.Players
	c.players = make([]*player, n)
	for i := range n {
		c.players[i] = newPlayer(c, uint32(c.cfg.FirstPlayer+i))
	}
	sem := make(chan struct{}, c.cfg.ConnectParallel)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i, p := range c.players {
		if d := time.Until(start.Add(time.Duration(i) * c.cfg.ConnectInterval)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := c.connectOne(ctx, p); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err, failed := <-errs; failed {
		if more := len(errs); more > 0 {
			return fmt.Errorf("%w (and %d more of the %d players)", err, more, n)
		}
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	fmt.Fprintf(c.stdout, "NETSTICK CONNECTED players=%d first=%d connect_s=%.3f\n", n, c.cfg.FirstPlayer, time.Since(start).Seconds())
	return nil
}

func (c *Client) connectOne(ctx context.Context, p *player) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	defer cancel()
	start := sched.Now()
	fail := func(err error) error {
		c.event(int64(p.id), "connect_failed", "", "error="+logs.Sanitize(err.Error()))
		// The one line a lost run leaves on stderr: which player, over which
		// transport, and the budget it had (CONTRACT.md section 2, exit code 4).
		return fmt.Errorf("player %d over %s: %w within -connect-timeout-s %s: %w",
			p.id, c.tr.Name(), ErrConnectFailed, strconv.FormatFloat(c.cfg.ConnectTimeout.Seconds(), 'f', -1, 64), err)
	}
	conn, err := c.tr.Dial(ctx, c.cfg.Addr(), p)
	if err != nil {
		return fail(err)
	}
	p.conn = conn
	p.helloMono = sched.Now()
	hello := wire.AppendHello(nil, wire.Hello{Player: p.id, Schema: wire.SchemaVersion})
	// The hello is repeated until the welcome arrives where either can be lost: on a
	// transport without reliability (udp), as a real game client would retry. A reliable
	// transport retransmits the hello itself; repeats would only queue behind it, and
	// the server answers every hello it gets with the welcome and the whole world.
	var retry <-chan time.Time
	if !c.tr.Caps().NativeReliable {
		t := time.NewTicker(helloRetry)
		defer t.Stop()
		retry = t.C
	}
	for {
		if err := conn.Send(transport.Reliable, hello); err != nil {
			return fail(fmt.Errorf("send hello: %w", err))
		}
		select {
		case wm := <-p.welcome:
			if wm.err != nil {
				return fail(fmt.Errorf("welcome: %w", wm.err))
			}
			c.event(int64(p.id), "connect", fmtMs(sched.Now()-start), "")
			c.event(int64(p.id), "spawn", "", fmt.Sprintf("x=%g y=%g z=%g", wm.w.Spawn.X, wm.w.Spawn.Y, wm.w.Spawn.Z))
			return nil
		case <-retry:
		case <-ctx.Done():
			return fail(fmt.Errorf("no welcome from the server: %w", ctx.Err()))
		}
	}
}

// helloRetry is how long a player waits for its welcome before saying hello again.
const helloRetry = 250 * time.Millisecond

// Run connects every player, plays the workload for the duration (or until ctx ends),
// drains and disconnects. The error wraps ErrConnectFailed or ErrServerLost.
func (c *Client) Run(ctx context.Context) (err error) {
	defer c.closeAll()
	if err := c.connect(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped by a signal while connecting
		}
		return err
	}
	start := sched.Now() + int64(time.Millisecond)
	for _, p := range c.players {
		c.schedule(p, start)
	}
	poller, polled := c.tr.(transport.Poller)
	if polled {
		poller.Drive(true)
		c.disp.Wait = poller.Wait
	}
	dispDone := make(chan struct{})
	go func() { c.disp.Run(); close(dispDone) }()
	var timer <-chan time.Time
	if c.cfg.Duration > 0 {
		timer = time.After(c.cfg.Duration)
	}
	secs := time.NewTicker(time.Second)
	defer secs.Stop()
	var lostErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-timer:
			break loop
		case lostErr = <-c.lost:
			break loop
		case <-secs.C:
			c.flushMalformed()
		}
	}
	c.disp.Stop()
	<-dispDone
	if polled {
		poller.Drive(false) // echoes in flight are read while the client drains
	}
	if lostErr != nil {
		c.stopping.Store(true)
		c.event(-1, "server_lost", "", "error="+logs.Sanitize(lostErr.Error()))
		c.probeEvents()
		return lostErr
	}
	c.drain()
	c.stopping.Store(true)
	c.probeEvents()
	return nil
}

// drain waits, sending nothing new, until no probe is in flight or drainNs passed.
func (c *Client) drain() {
	deadline := sched.Now() + drainNs
	for sched.Now() < deadline {
		inflight := uint64(0)
		now := sched.Now()
		for _, p := range c.players {
			for k := range 2 {
				_, _, _, in := p.probeTotals(wire.ProbeKind(k), now)
				inflight += in
			}
		}
		if inflight == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *Client) probeEvents() {
	now := sched.Now()
	for _, p := range c.players {
		for k := range 2 {
			sent, echoed, lost, inflight := p.probeTotals(wire.ProbeKind(k), now)
			if sent == 0 {
				continue
			}
			c.event(int64(p.id), "probes", strconv.FormatUint(sent, 10),
				fmt.Sprintf("kind=%s echoed=%d lost=%d inflight=%d", kindNames[k], echoed, lost, inflight))
		}
	}
	c.flushMalformed()
}

func (c *Client) closeAll() {
	c.stopping.Store(true)
	var wg sync.WaitGroup
	for _, p := range c.players {
		if p != nil && p.conn != nil {
			wg.Add(1)
			go func() { defer wg.Done(); _ = p.conn.Close() }()
		}
	}
	wg.Wait()
}
