package kcp

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kcpgo "github.com/xtaci/kcp-go/v5"

	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/transport/transporttest"
)

func mk(t *testing.T, opts transport.Options) *Transport {
	t.Helper()
	tr, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Transport { return mk(t, nil) })
}

func TestRegisteredAndCaps(t *testing.T) {
	tr, err := transport.New("kcp", transport.Options{"mtu": "1400", "rcvwnd": "128"})
	if err != nil {
		t.Fatal(err)
	}
	caps := tr.Caps()
	if !caps.NativeReliable || caps.NativeUnreliable {
		t.Fatalf("caps %+v", caps)
	}
	if want := 128*(1400-24) - 5; caps.MaxReliableBytes != want || caps.MaxUnreliableBytes != want {
		t.Fatalf("max message %d, want %d", caps.MaxReliableBytes, want)
	}
	if got := mk(t, nil).Caps().MaxReliableBytes; got != 255*1176-5 {
		t.Fatalf("default max message %d", got)
	}
}

func TestOptionErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct{ key, val string }{
		{"nodelay", "2"}, {"interval_ms", "x"}, {"resend", "-1"}, {"nc", "yes"}, {"sndwnd", "0"},
		{"rcvwnd", "70000"}, {"mtu", "20"}, {"timeout_ms", "10"}, {"sockbuf", "-5"}, {"bogus", "1"},
	} {
		_, err := New(transport.Options{tc.key: tc.val})
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("option %s=%s: error %v does not name the key", tc.key, tc.val, err)
		}
	}
}

// events counts callbacks, optionally echoing, and records the last message.
type events struct {
	connected, disconnected, received atomic.Int64
	echo                              bool
	mu                                sync.Mutex
	last                              []byte
	lastCh                            transport.Channel
	lastErr                           error
}

func (e *events) Connected(transport.Conn) { e.connected.Add(1) }
func (e *events) Received(c transport.Conn, ch transport.Channel, msg []byte) {
	e.mu.Lock()
	e.last, e.lastCh = bytes.Clone(msg), ch
	e.mu.Unlock()
	e.received.Add(1)
	if e.echo {
		_ = c.Send(ch, msg)
	}
}
func (e *events) Disconnected(_ transport.Conn, err error) {
	e.mu.Lock()
	e.lastErr = err
	e.mu.Unlock()
	e.disconnected.Add(1)
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func setup(t *testing.T, opts transport.Options) (*Transport, *events, transport.Listener, *events, transport.Conn) {
	t.Helper()
	tr := mk(t, opts)
	srv := &events{echo: true}
	ln, err := tr.Listen("127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	cli := &events{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := tr.Dial(ctx, ln.Addr(), cli)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return tr, srv, ln, cli, c
}

func TestLibRTTAfterTraffic(t *testing.T) {
	_, _, _, cli, c := setup(t, nil)
	for i := range 20 {
		if err := c.Send(transport.Reliable, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	waitFor(t, "echoes", 3*time.Second, func() bool { return cli.received.Load() == 20 })
	rtt, ok := c.(transport.RTTEstimator).LibRTT()
	if !ok || rtt < 0 || rtt > 100*time.Millisecond {
		t.Fatalf("LibRTT = %v, %v", rtt, ok)
	}
}

// Unreliable messages ride KCP but keep their channel; long messages of both
// channels are reassembled, and ErrTooLarge starts right above Caps.
func TestChannelsAndSizes(t *testing.T) {
	tr, _, _, cli, c := setup(t, transport.Options{"rcvwnd": "64"})
	max := tr.Caps().MaxReliableBytes
	for _, tc := range []struct {
		ch   transport.Channel
		size int
	}{{transport.Unreliable, 0}, {transport.Unreliable, 1175}, {transport.Reliable, 1176},
		{transport.Unreliable, 5000}, {transport.Reliable, max}} {
		want := bytes.Repeat([]byte{byte(tc.size)}, tc.size)
		n := cli.received.Load()
		if err := c.Send(tc.ch, want); err != nil {
			t.Fatalf("send %v %d B: %v", tc.ch, tc.size, err)
		}
		waitFor(t, "echo", 5*time.Second, func() bool { return cli.received.Load() == n+1 })
		cli.mu.Lock()
		got, ch := cli.last, cli.lastCh
		cli.mu.Unlock()
		if ch != tc.ch || !bytes.Equal(got, want) {
			t.Fatalf("%v %d B came back as %v %d B", tc.ch, tc.size, ch, len(got))
		}
	}
	if err := c.Send(transport.Unreliable, make([]byte, max+1)); !errors.Is(err, transport.ErrTooLarge) {
		t.Fatalf("send of max+1: %v", err)
	}
}

// silentClient is a bare kcp-go session that did the hello exchange by hand and then
// says nothing: no keepalives, only KCP's own acks.
func silentClient(t *testing.T, addr string) *kcpgo.UDPSession {
	t.Helper()
	sess, err := kcpgo.DialWithOptions(addr, nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	if _, err := sess.Write(helloMsg); err != nil {
		t.Fatal(err)
	}
	_ = sess.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 1500)
	n, err := sess.Read(buf)
	if err != nil || !bytes.Equal(buf[:n], helloAckMsg) {
		t.Fatalf("hello ack: %q %v", buf[:n], err)
	}
	return sess
}

// An idle but alive pair survives on keepalives; a peer that goes silent without a
// close message is expired by the timeout, on either side.
func TestTimeoutAndKeepalive(t *testing.T) {
	opts := transport.Options{"timeout_ms": "300"}
	_, srv, ln, cli, _ := setup(t, opts)
	time.Sleep(time.Second)
	if srv.disconnected.Load() != 0 || cli.disconnected.Load() != 0 {
		t.Fatal("idle connection dropped despite keepalives")
	}

	silentClient(t, ln.Addr())
	waitFor(t, "server to expire the silent client", 3*time.Second, func() bool { return srv.disconnected.Load() == 1 })
	srv.mu.Lock()
	err := srv.lastErr
	srv.mu.Unlock()
	if err == nil || !strings.Contains(err.Error(), "no message") {
		t.Fatalf("server disconnect reason %v", err)
	}

	// A server that answers the hello and then says nothing.
	kl, err := kcpgo.ListenWithOptions("127.0.0.1:0", nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer kl.Close()
	go func() {
		sess, err := kl.AcceptKCP()
		if err != nil {
			return
		}
		defer sess.Close()
		buf := make([]byte, 1500)
		if _, err := sess.Read(buf); err == nil {
			_, _ = sess.Write(helloAckMsg)
		}
		time.Sleep(3 * time.Second)
	}()
	col := &events{}
	c, err := mk(t, opts).Dial(context.Background(), kl.Addr().String(), col)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, "client to expire the silent server", 3*time.Second, func() bool { return col.disconnected.Load() == 1 })
	col.mu.Lock()
	err = col.lastErr
	col.mu.Unlock()
	if err == nil || !strings.Contains(err.Error(), "no message") {
		t.Fatalf("client disconnect reason %v", err)
	}
}

// Garbage, KCP-looking datagrams without a hello, and a KCP session from a stranger
// never become connections and never break the listener.
func TestHostileDatagrams(t *testing.T) {
	tr := mk(t, transport.Options{"timeout_ms": "300"})
	srv := &events{echo: true}
	ln, err := tr.Listen("127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	raw, err := net.Dial("udp", ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	kcpish := make([]byte, 24+4)
	kcpish[4] = 81 // IKCP_CMD_PUSH
	kcpish[20] = 4 // len
	copy(kcpish[24:], "\x13\x00\x00\x00")
	for _, d := range [][]byte{{}, {0}, make([]byte, 23), make([]byte, 24), kcpish, bytes.Repeat([]byte{0xff}, 1400)} {
		_, _ = raw.Write(d)
	}
	cli := &events{}
	c, err := tr.Dial(context.Background(), ln.Addr(), cli)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send(transport.Reliable, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "echo", 3*time.Second, func() bool { return cli.received.Load() == 1 })
	time.Sleep(600 * time.Millisecond) // the stranger's session passes its hello deadline
	if n, d := srv.connected.Load(), srv.disconnected.Load(); n != 1 || d != 0 {
		t.Fatalf("connected %d disconnected %d, want 1 and 0", n, d)
	}
}

func TestDialRefusedIsFast(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	_ = pc.Close()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = mk(t, nil).Dial(ctx, addr, &events{})
	if !errors.Is(err, transport.ErrConnect) {
		t.Fatalf("dial error %v does not wrap ErrConnect", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("refused dial took %v; ECONNREFUSED should end it at once", d)
	}
}

func TestDialHonoursCancel(t *testing.T) {
	// A socket that reads nothing: no ICMP error, no answer.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err = mk(t, nil).Dial(ctx, pc.LocalAddr().String(), &events{})
	if !errors.Is(err, transport.ErrConnect) || !errors.Is(err, context.Canceled) {
		t.Fatalf("dial error %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("cancelled dial took %v", d)
	}
}

// A snapshot burst of a few MB of ~60 KB reliable messages arrives complete and in
// order, even though it overflows the 1024-segment send window many times.
func TestSnapshotBurst(t *testing.T) {
	var got, bad atomic.Int64
	cli2 := &orderCheck{next: &got, bad: &bad}
	tr := mk(t, nil)
	ln, err := tr.Listen("127.0.0.1:0", &events{echo: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c2, err := tr.Dial(context.Background(), ln.Addr(), cli2)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	const n, size = 50, 60000
	msg := make([]byte, size)
	for i := range n {
		msg[0], msg[size-1] = byte(i), byte(i)
		if err := c2.Send(transport.Reliable, msg); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "burst echoes", 15*time.Second, func() bool { return got.Load() == n })
	if bad.Load() != 0 {
		t.Fatal("burst messages out of order or corrupted")
	}
}

type orderCheck struct {
	next, bad *atomic.Int64
}

func (o *orderCheck) Connected(transport.Conn) {}
func (o *orderCheck) Received(_ transport.Conn, _ transport.Channel, m []byte) {
	i := byte(o.next.Load())
	if len(m) != 60000 || m[0] != i || m[len(m)-1] != i {
		o.bad.Add(1)
	}
	o.next.Add(1)
}
func (o *orderCheck) Disconnected(transport.Conn, error) {}

func TestManyPlayers(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	tr := mk(t, nil)
	srv := &events{echo: true}
	ln, err := tr.Listen("127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const players, ticks = 100, 60
	cols := make([]*events, players)
	conns := make([]transport.Conn, players)
	for i := range conns {
		cols[i] = &events{}
		c, err := tr.Dial(context.Background(), ln.Addr(), cols[i])
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	msg := make([]byte, 100)
	tk := time.NewTicker(time.Second / 60)
	defer tk.Stop()
	for range ticks {
		<-tk.C
		for _, c := range conns {
			if err := c.Send(transport.Unreliable, msg); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, "all echoes", 10*time.Second, func() bool {
		var got int64
		for _, col := range cols {
			got += col.received.Load()
		}
		return got == players*ticks
	})
}

// Closing everything leaves no goroutines behind (kcp-go's global schedulers were
// started at package init and are part of the baseline).
func TestNoGoroutineLeak(t *testing.T) {
	base := runtime.NumGoroutine()
	tr := mk(t, nil)
	srv := &events{echo: true}
	ln, err := tr.Listen("127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	var conns []transport.Conn
	cols := make([]*events, 5)
	for i := range cols {
		cols[i] = &events{}
		c, err := tr.Dial(context.Background(), ln.Addr(), cols[i])
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Send(transport.Reliable, []byte("x"))
		conns = append(conns, c)
	}
	waitFor(t, "echoes", 3*time.Second, func() bool {
		for _, col := range cols {
			if col.received.Load() != 1 {
				return false
			}
		}
		return true
	})
	_ = conns[0].Close()
	_ = ln.Close()
	for _, c := range conns[1:] {
		_ = c.Close()
	}
	waitFor(t, "every Disconnected", 3*time.Second, func() bool {
		n := srv.disconnected.Load()
		for _, col := range cols {
			n += col.disconnected.Load()
		}
		return n == 10
	})
	waitGoroutines(t, base)
}

// waitGoroutines fails unless the goroutine count falls back to base. A leak never ends; under
// the race detector on a loaded 2-core machine teardown once took over 10 s, so it waits 30 s.
// On failure the stacks say what is left.
func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines after 30 s, %d before; stacks:\n%s",
				runtime.NumGoroutine(), base, buf[:n])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Close must not hang behind a Send blocked on a full window (a peer that stopped
// reading), and the blocked Send must return ErrClosed.
func TestCloseReleasesBlockedSend(t *testing.T) {
	kl, err := kcpgo.ListenWithOptions("127.0.0.1:0", nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer kl.Close()
	go func() {
		sess, err := kl.AcceptKCP()
		if err != nil {
			return
		}
		defer sess.Close()
		buf := make([]byte, 1500)
		if _, err := sess.Read(buf); err == nil {
			_, _ = sess.Write(helloAckMsg)
		}
		time.Sleep(5 * time.Second) // never reads again: its window fills up
	}()
	tr := mk(t, transport.Options{"sndwnd": "8", "rcvwnd": "8"})
	c, err := tr.Dial(context.Background(), kl.Addr().String(), &events{})
	if err != nil {
		t.Fatal(err)
	}
	sendErr := make(chan error, 1)
	go func() {
		msg := make([]byte, 1000)
		for {
			if err := c.Send(transport.Reliable, msg); err != nil {
				sendErr <- err
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond) // the sender is blocked by now
	select {
	case err := <-sendErr:
		t.Fatalf("send failed before close: %v", err)
	default:
	}
	start := time.Now()
	_ = c.Close()
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Close took %v", d)
	}
	select {
	case err := <-sendErr:
		if !errors.Is(err, transport.ErrClosed) {
			t.Fatalf("blocked send returned %v, want ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("blocked send not released by Close")
	}
}

// Sessions kcp-go queued for Accept when the listener closes are closed too: kcp-go makes a
// session for every datagram from an address it has no session for (a player's last packets
// after its session ended, or strangers) and never closes the ones still queued at Close, each
// holding a goroutine. Datagrams from many addresses arrive while the listener closes.
func TestCloseWhileSessionsQueue(t *testing.T) {
	base := runtime.NumGoroutine()
	ln, err := mk(t, nil).Listen("127.0.0.1:0", &events{})
	if err != nil {
		t.Fatal(err)
	}
	kcpish := make([]byte, 24+4)
	kcpish[4] = 81 // IKCP_CMD_PUSH
	kcpish[20] = 4
	copy(kcpish[24:], "\x13\x00\x00\x00")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ { // bounded: each datagram from a fresh address
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.Dial("udp", ln.Addr())
				if err != nil {
					return
				}
				_, _ = c.Write(kcpish)
				_ = c.Close()
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	waitGoroutines(t, base)
}
