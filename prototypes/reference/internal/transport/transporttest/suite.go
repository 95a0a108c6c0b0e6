// Package transporttest is the conformance suite every transport must pass: echo on
// both channels, ordering of reliable messages, large messages, concurrent senders,
// refused connections, bind conflicts and disconnect notification in both directions.
package transporttest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"netstick/prototypes/reference/internal/transport"
)

// echoServer echoes every message on the channel it arrived on.
type echoServer struct {
	connected    atomic.Int64
	disconnected atomic.Int64
	mu           sync.Mutex
	conns        []transport.Conn
}

func (s *echoServer) Connected(c transport.Conn) {
	s.connected.Add(1)
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.mu.Unlock()
}

func (s *echoServer) Received(c transport.Conn, ch transport.Channel, msg []byte) {
	_ = c.Send(ch, msg)
}

func (s *echoServer) Disconnected(transport.Conn, error) { s.disconnected.Add(1) }

// collector records what one client connection receives.
type collector struct {
	mu           sync.Mutex
	got          map[transport.Channel][][]byte
	disconnected chan error
	once         sync.Once
}

func newCollector() *collector {
	return &collector{got: map[transport.Channel][][]byte{}, disconnected: make(chan error, 1)}
}

func (c *collector) Connected(transport.Conn) {}

func (c *collector) Received(_ transport.Conn, ch transport.Channel, msg []byte) {
	c.mu.Lock()
	c.got[ch] = append(c.got[ch], bytes.Clone(msg))
	c.mu.Unlock()
}

func (c *collector) Disconnected(_ transport.Conn, err error) {
	c.once.Do(func() { c.disconnected <- err })
}

func (c *collector) count(ch transport.Channel) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got[ch])
}

func (c *collector) messages(ch transport.Channel) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.got[ch]...)
}

func freePort(t *testing.T) int {
	t.Helper()
	// A port free for both TCP and UDP, so every transport family can bind it.
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		_ = l.Close()
		if err == nil {
			_ = u.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}

func payload(player, seq, size int) []byte {
	b := make([]byte, size)
	if size >= 8 {
		binary.BigEndian.PutUint32(b[0:], uint32(player))
		binary.BigEndian.PutUint32(b[4:], uint32(seq))
	}
	for i := 8; i < size; i++ {
		b[i] = byte(i * 7)
	}
	return b
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s", d, what)
}

// Run runs the conformance suite against the transport made by mk.
func Run(t *testing.T, mk func(t *testing.T) transport.Transport) {
	t.Run("EchoBothChannels", func(t *testing.T) { testEcho(t, mk(t)) })
	t.Run("LargeReliable", func(t *testing.T) { testLarge(t, mk(t)) })
	t.Run("ConcurrentSenders", func(t *testing.T) { testConcurrent(t, mk(t)) })
	t.Run("DialRefused", func(t *testing.T) { testRefused(t, mk(t)) })
	t.Run("BindInUse", func(t *testing.T) { testBindInUse(t, mk(t)) })
	t.Run("ServerCloseNotifiesClient", func(t *testing.T) { testServerClose(t, mk(t)) })
	t.Run("ClientCloseNotifiesServer", func(t *testing.T) { testClientClose(t, mk(t)) })
}

func listen(t *testing.T, tr transport.Transport, h transport.Handler) (transport.Listener, string) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ln, err := tr.Listen(addr, h)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln, addr
}

func dial(t *testing.T, tr transport.Transport, addr string, h transport.Handler) transport.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := tr.Dial(ctx, addr, h)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func testEcho(t *testing.T, tr transport.Transport) {
	srv := &echoServer{}
	_, addr := listen(t, tr, srv)
	const players, msgs = 8, 200
	cols := make([]*collector, players)
	conns := make([]transport.Conn, players)
	for i := range players {
		cols[i] = newCollector()
		conns[i] = dial(t, tr, addr, cols[i])
	}
	waitFor(t, "server to see every connection", 5*time.Second, func() bool { return srv.connected.Load() == players })
	for seq := range msgs {
		for i, c := range conns {
			if err := c.Send(transport.Reliable, payload(i, seq, 16+seq%300)); err != nil {
				t.Fatalf("reliable send: %v", err)
			}
			if err := c.Send(transport.Unreliable, payload(i, seq, 100)); err != nil {
				t.Fatalf("unreliable send: %v", err)
			}
		}
		if seq%20 == 0 {
			time.Sleep(time.Millisecond) // paced like a game, not a flood
		}
	}
	for i, col := range cols {
		waitFor(t, fmt.Sprintf("player %d reliable echoes", i), 10*time.Second, func() bool { return col.count(transport.Reliable) == msgs })
		for seq, m := range col.messages(transport.Reliable) {
			if want := payload(i, seq, 16+seq%300); !bytes.Equal(m, want) {
				t.Fatalf("player %d reliable message %d: out of order or corrupted", i, seq)
			}
		}
	}
	// Best effort on loopback: nearly everything arrives, and intact.
	time.Sleep(200 * time.Millisecond)
	for i, col := range cols {
		got := col.messages(transport.Unreliable)
		if len(got) < msgs*9/10 {
			t.Fatalf("player %d: %d of %d unreliable echoes", i, len(got), msgs)
		}
		for _, m := range got {
			if len(m) != 100 || int(binary.BigEndian.Uint32(m)) != i {
				t.Fatalf("player %d: corrupted unreliable echo", i)
			}
		}
	}
}

func testLarge(t *testing.T, tr transport.Transport) {
	srv := &echoServer{}
	_, addr := listen(t, tr, srv)
	col := newCollector()
	c := dial(t, tr, addr, col)
	size := min(tr.Caps().MaxReliableBytes, 60000)
	want := payload(1, 1, size)
	if err := c.Send(transport.Reliable, want); err != nil {
		t.Fatalf("send %d B: %v", size, err)
	}
	waitFor(t, "large echo", 10*time.Second, func() bool { return col.count(transport.Reliable) == 1 })
	if got := col.messages(transport.Reliable)[0]; !bytes.Equal(got, want) {
		t.Fatalf("large message corrupted: got %d B, want %d B", len(got), len(want))
	}
	if max := tr.Caps().MaxReliableBytes; max < 1<<24 {
		if err := c.Send(transport.Reliable, make([]byte, max+1)); !errors.Is(err, transport.ErrTooLarge) {
			t.Fatalf("send of %d B (limit %d): got %v, want ErrTooLarge", max+1, max, err)
		}
	}
}

func testConcurrent(t *testing.T, tr transport.Transport) {
	srv := &echoServer{}
	_, addr := listen(t, tr, srv)
	col := newCollector()
	c := dial(t, tr, addr, col)
	const senders, each = 4, 100
	var wg sync.WaitGroup
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range each {
				if err := c.Send(transport.Reliable, payload(g, seq, 64)); err != nil {
					t.Errorf("send: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	waitFor(t, "all concurrent echoes", 10*time.Second, func() bool { return col.count(transport.Reliable) == senders*each })
	next := make([]int, senders)
	for _, m := range col.messages(transport.Reliable) {
		g, seq := int(binary.BigEndian.Uint32(m)), int(binary.BigEndian.Uint32(m[4:]))
		if g >= senders || seq != next[g] {
			t.Fatalf("interleaved or corrupted message from sender %d seq %d", g, seq)
		}
		next[g]++
	}
}

func testRefused(t *testing.T, tr transport.Transport) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	c, err := tr.Dial(ctx, addr, newCollector())
	if err == nil {
		_ = c.Close()
		t.Fatal("dial to a port nobody listens on succeeded")
	}
	if !errors.Is(err, transport.ErrConnect) {
		t.Fatalf("dial error %v does not wrap ErrConnect", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("refused dial took %v, ignoring its context", time.Since(start))
	}
}

func testBindInUse(t *testing.T, tr transport.Transport) {
	_, addr := listen(t, tr, &echoServer{})
	ln, err := tr.Listen(addr, &echoServer{})
	if err == nil {
		_ = ln.Close()
		t.Fatal("second listen on the same address succeeded")
	}
	if !errors.Is(err, transport.ErrBind) {
		t.Fatalf("bind error %v does not wrap ErrBind", err)
	}
}

func testServerClose(t *testing.T, tr transport.Transport) {
	srv := &echoServer{}
	ln, addr := listen(t, tr, srv)
	col := newCollector()
	_ = dial(t, tr, addr, col)
	waitFor(t, "connection", 5*time.Second, func() bool { return srv.connected.Load() == 1 })
	_ = ln.Close()
	select {
	case <-col.disconnected:
	case <-time.After(8 * time.Second):
		t.Fatal("client not told within 8 s that the server went away")
	}
}

func testClientClose(t *testing.T, tr transport.Transport) {
	srv := &echoServer{}
	_, addr := listen(t, tr, srv)
	col := newCollector()
	c := dial(t, tr, addr, col)
	waitFor(t, "connection", 5*time.Second, func() bool { return srv.connected.Load() == 1 })
	_ = c.Close()
	waitFor(t, "server to see the disconnect", 8*time.Second, func() bool { return srv.disconnected.Load() == 1 })
	if err := c.Send(transport.Reliable, []byte("x")); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("send after close: got %v, want ErrClosed", err)
	}
}
