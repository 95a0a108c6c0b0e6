// Package transporttest is the conformance suite every transport must pass: echo on
// both channels, ordering of reliable messages, large messages, concurrent senders,
// refused connections, bind conflicts, disconnect notification in both directions, and
// for a transport.Poller, callbacks only inside Wait while driven.
// It also holds what the transports' own tests share, written once so that a fix
// reaches them all: a recording Handler (Recorder), listen and dial helpers, WaitFor,
// the goroutine-leak check and a lossy relay (ConnectThroughLoss).
package transporttest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"netstick/prototypes/reference/internal/transport"
)

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

// Run runs the conformance suite against the transport registered as name, built
// with opts afresh for each case.
func Run(t *testing.T, name string, opts transport.Options) {
	mk := func(t *testing.T) transport.Transport { return New(t, name, opts) }
	t.Run("EchoBothChannels", func(t *testing.T) { testEcho(t, mk(t)) })
	if _, ok := mk(t).(transport.Poller); ok {
		t.Run("Driven", func(t *testing.T) { testDriven(t, mk(t)) })
	}
	t.Run("LargeReliable", func(t *testing.T) { testLarge(t, mk(t)) })
	t.Run("ConcurrentSenders", func(t *testing.T) { testConcurrent(t, mk(t)) })
	t.Run("DialRefused", func(t *testing.T) { testRefused(t, mk(t)) })
	t.Run("BindInUse", func(t *testing.T) { testBindInUse(t, mk(t)) })
	t.Run("ServerCloseNotifiesClient", func(t *testing.T) { testServerClose(t, mk(t)) })
	t.Run("ClientCloseNotifiesServer", func(t *testing.T) { testClientClose(t, mk(t)) })
}

func testEcho(t *testing.T, tr transport.Transport) {
	srv := &Recorder{Echo: true}
	_, addr := Listen(t, tr, srv)
	const players, msgs = 8, 200
	cols := make([]*Recorder, players)
	conns := make([]transport.Conn, players)
	for i := range players {
		cols[i] = &Recorder{}
		conns[i] = Dial(t, tr, addr, cols[i])
	}
	WaitFor(t, "server to see every connection", 5*time.Second, func() bool { return srv.NumConnected() == players })
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
		WaitFor(t, fmt.Sprintf("player %d reliable echoes", i), 10*time.Second, func() bool { return col.Count(transport.Reliable) == msgs })
		for seq, m := range col.Messages(transport.Reliable) {
			if want := payload(i, seq, 16+seq%300); !bytes.Equal(m, want) {
				t.Fatalf("player %d reliable message %d: out of order or corrupted", i, seq)
			}
		}
	}
	// Best effort on loopback: nearly everything arrives, and intact.
	time.Sleep(200 * time.Millisecond)
	for i, col := range cols {
		got := col.Messages(transport.Unreliable)
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
	srv := &Recorder{Echo: true}
	_, addr := Listen(t, tr, srv)
	col := &Recorder{}
	c := Dial(t, tr, addr, col)
	size := min(tr.Caps().MaxReliableBytes, 60000)
	want := payload(1, 1, size)
	if err := c.Send(transport.Reliable, want); err != nil {
		t.Fatalf("send %d B: %v", size, err)
	}
	WaitFor(t, "large echo", 10*time.Second, func() bool { return col.Count(transport.Reliable) == 1 })
	if got := col.Messages(transport.Reliable)[0]; !bytes.Equal(got, want) {
		t.Fatalf("large message corrupted: got %d B, want %d B", len(got), len(want))
	}
	if max := tr.Caps().MaxReliableBytes; max < 1<<24 {
		if err := c.Send(transport.Reliable, make([]byte, max+1)); !errors.Is(err, transport.ErrTooLarge) {
			t.Fatalf("send of %d B (limit %d): got %v, want ErrTooLarge", max+1, max, err)
		}
	}
}

func testConcurrent(t *testing.T, tr transport.Transport) {
	srv := &Recorder{Echo: true}
	_, addr := Listen(t, tr, srv)
	col := &Recorder{}
	c := Dial(t, tr, addr, col)
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
	WaitFor(t, "all concurrent echoes", 10*time.Second, func() bool { return col.Count(transport.Reliable) == senders*each })
	next := make([]int, senders)
	for _, m := range col.Messages(transport.Reliable) {
		g, seq := int(binary.BigEndian.Uint32(m)), int(binary.BigEndian.Uint32(m[4:]))
		if g >= senders || seq != next[g] {
			t.Fatalf("interleaved or corrupted message from sender %d seq %d", g, seq)
		}
		next[g]++
	}
}

func testRefused(t *testing.T, tr transport.Transport) {
	addr := FreeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	c, err := tr.Dial(ctx, addr, &Recorder{})
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
	_, addr := Listen(t, tr, &Recorder{Echo: true})
	ln, err := tr.Listen(addr, &Recorder{Echo: true})
	if err == nil {
		_ = ln.Close()
		t.Fatal("second listen on the same address succeeded")
	}
	if !errors.Is(err, transport.ErrBind) {
		t.Fatalf("bind error %v does not wrap ErrBind", err)
	}
}

func testServerClose(t *testing.T, tr transport.Transport) {
	srv := &Recorder{Echo: true}
	ln, addr := Listen(t, tr, srv)
	col := &Recorder{}
	_ = Dial(t, tr, addr, col)
	WaitFor(t, "connection", 5*time.Second, func() bool { return srv.NumConnected() == 1 })
	_ = ln.Close()
	_ = col.NextReason(t, "client told that the server went away", 8*time.Second)
}

func testClientClose(t *testing.T, tr transport.Transport) {
	srv := &Recorder{Echo: true}
	_, addr := Listen(t, tr, srv)
	col := &Recorder{}
	c := Dial(t, tr, addr, col)
	WaitFor(t, "connection", 5*time.Second, func() bool { return srv.NumConnected() == 1 })
	_ = c.Close()
	WaitFor(t, "server to see the disconnect", 8*time.Second, func() bool { return srv.NumDisconnected() == 1 })
	if err := c.Send(transport.Reliable, []byte("x")); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("send after close: got %v, want ErrClosed", err)
	}
}
