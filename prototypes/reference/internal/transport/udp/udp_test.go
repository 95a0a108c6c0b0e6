package udp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

func TestRegistered(t *testing.T) {
	tr, err := transport.New("udp", transport.Options{"timeout_ms": "500", "sockbuf": "0"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Name() != "udp" || tr.Caps().NativeReliable || !tr.Caps().NativeUnreliable {
		t.Fatalf("unexpected transport %s caps %+v", tr.Name(), tr.Caps())
	}
}

func TestOptionErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct{ key, val string }{
		{"timeout_ms", "abc"}, {"timeout_ms", "5"}, {"sockbuf", "-1"}, {"bogus", "1"},
	} {
		_, err := New(transport.Options{tc.key: tc.val})
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("option %s=%s: error %v does not name the key", tc.key, tc.val, err)
		}
	}
}

// events counts callbacks and checks that Disconnected comes once, after Connected.
type events struct {
	connected, disconnected, received atomic.Int64
	bad                               atomic.Int64
	lastErr                           atomic.Value
	echo                              bool
}

func (e *events) Connected(transport.Conn) { e.connected.Add(1) }
func (e *events) Received(c transport.Conn, ch transport.Channel, msg []byte) {
	e.received.Add(1)
	if e.echo {
		_ = c.Send(ch, msg)
	}
}
func (e *events) Disconnected(_ transport.Conn, err error) {
	if e.disconnected.Add(1) > e.connected.Load() {
		e.bad.Add(1)
	}
	if err != nil {
		e.lastErr.Store(err)
	}
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

func listen(t *testing.T, tr *Transport, h transport.Handler) transport.Listener {
	t.Helper()
	ln, err := tr.Listen("127.0.0.1:0", h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// An idle but alive pair survives on keepalives; a peer that goes silent without a
// disconnect datagram is expired by the timeout, on either side.
func TestTimeoutAndKeepalive(t *testing.T) {
	tr := mk(t, transport.Options{"timeout_ms": "300"})
	srv := &events{echo: true}
	ln := listen(t, tr, srv)
	cli := &events{}
	c, err := tr.Dial(context.Background(), ln.Addr(), cli)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(time.Second) // idle for > 3 timeouts
	if srv.disconnected.Load() != 0 || cli.disconnected.Load() != 0 {
		t.Fatal("idle connection dropped despite keepalives")
	}

	// A client that connects by hand and then says nothing.
	raw, err := net.Dial("udp", ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_, _ = raw.Write(connectMsg)
	waitFor(t, "silent client to connect", 3*time.Second, func() bool { return srv.connected.Load() == 2 })
	waitFor(t, "server to expire the silent client", 3*time.Second, func() bool { return srv.disconnected.Load() == 1 })
	if err, _ := srv.lastErr.Load().(error); err == nil || !strings.Contains(err.Error(), "no datagram") {
		t.Fatalf("server disconnect reason %v", err)
	}

	// A server that accepts by hand and then says nothing.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 100)
		if _, from, err := pc.ReadFrom(buf); err == nil {
			_, _ = pc.WriteTo(acceptMsg, from)
		}
	}()
	col := &events{}
	c2, err := tr.Dial(context.Background(), pc.LocalAddr().String(), col)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	waitFor(t, "client to expire the silent server", 3*time.Second, func() bool { return col.disconnected.Load() == 1 })
	if err, _ := col.lastErr.Load().(error); err == nil || !strings.Contains(err.Error(), "no datagram") {
		t.Fatalf("client disconnect reason %v", err)
	}
	if srv.bad.Load()+cli.bad.Load()+col.bad.Load() != 0 {
		t.Fatal("Disconnected reported more often than Connected")
	}
}

// Hostile datagrams (garbage, truncated control messages, data from strangers) must
// be dropped without harming the listener.
func TestHostileDatagrams(t *testing.T) {
	tr := mk(t, nil)
	srv := &events{echo: true}
	ln := listen(t, tr, srv)
	raw, err := net.Dial("udp", ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, d := range [][]byte{{}, {0}, {1, 2, 3}, {tagConnect}, {tagConnect, 'x'}, {tagAccept, 'N', 'S', 'U', '1'},
		{tagDisconnect}, {tagKeepalive}, {0xff, 0xff}, make([]byte, 9000)} {
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
	if n := srv.connected.Load(); n != 1 {
		t.Fatalf("hostile datagrams created connections: %d connected", n)
	}
}

func TestDialRefusedIsFast(t *testing.T) {
	tr := mk(t, nil)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	_ = pc.Close()
	start := time.Now()
	_, err = tr.Dial(context.Background(), addr, &events{})
	if !errors.Is(err, transport.ErrConnect) {
		t.Fatalf("dial error %v does not wrap ErrConnect", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("refused dial took %v; ECONNREFUSED should end it at once", d)
	}
}

func TestSizeLimits(t *testing.T) {
	tr := mk(t, nil)
	ln := listen(t, tr, &events{echo: true})
	col := &events{}
	c, err := tr.Dial(context.Background(), ln.Addr(), col)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, ch := range []transport.Channel{transport.Reliable, transport.Unreliable} {
		if err := c.Send(ch, make([]byte, MaxMessageBytes)); err != nil {
			t.Fatalf("%v send of max size: %v", ch, err)
		}
		if err := c.Send(ch, make([]byte, MaxMessageBytes+1)); !errors.Is(err, transport.ErrTooLarge) {
			t.Fatalf("%v send of max+1: %v, want ErrTooLarge", ch, err)
		}
	}
	waitFor(t, "max-size echoes", 3*time.Second, func() bool { return col.received.Load() >= 2 })
	if err := c.Send(transport.Channel(7), []byte("x")); err == nil {
		t.Fatal("send on unknown channel succeeded")
	}
}

// Many players at 60 Hz on one server socket: the single receive goroutine keeps up.
func TestManyPlayers(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	tr := mk(t, nil)
	srv := &events{echo: true}
	ln := listen(t, tr, srv)
	const players, ticks = 200, 60
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
	time.Sleep(300 * time.Millisecond)
	var got int64
	for _, col := range cols {
		got += col.received.Load()
	}
	if want := int64(players * ticks); got < want*99/100 {
		t.Fatalf("%d of %d echoes", got, want)
	}
	fmt.Printf("many players: %d/%d echoes\n", got, players*ticks)
}

// Closing everything leaves no goroutines behind and reports every Disconnected.
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
	if srv.bad.Load() != 0 {
		t.Fatal("Disconnected before Connected")
	}
	waitFor(t, "goroutines to end", 10*time.Second, func() bool { return runtime.NumGoroutine() <= base })
}
