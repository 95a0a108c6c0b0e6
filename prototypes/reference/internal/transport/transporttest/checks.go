package transporttest

// Checks that several transports' own tests make, beyond the conformance suite.

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"netstick/prototypes/reference/internal/transport"
)

// NoGoroutineLeak checks that a server with five players, once everything has ended,
// leaves no goroutine behind: a server runs a whole benchmark run while players come
// and go, so what each connection leaks adds up. The players end in each way
// a connection ends: two close before the listener does, two close while the server
// shuts down, one is never closed and must be ended by the server's going away. Every
// Disconnected must come, once and after its Connected.
func NoGoroutineLeak(t *testing.T, tr transport.Transport) {
	t.Helper()
	base := runtime.NumGoroutine()
	srv := &Recorder{Echo: true}
	ln, err := tr.Listen("127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	players := make([]*Recorder, 5)
	conns := make([]transport.Conn, len(players))
	for i := range players {
		players[i] = &Recorder{}
		conns[i] = Dial(t, tr, ln.Addr(), players[i])
		_ = conns[i].Send(transport.Reliable, []byte("x"))
	}
	WaitFor(t, "every echo", 10*time.Second, func() bool {
		for _, p := range players {
			if p.NumReceived() != 1 {
				return false
			}
		}
		return true
	})
	_ = conns[0].Close()
	_ = conns[1].Close()
	_ = ln.Close()
	_ = conns[2].Close()
	_ = conns[3].Close()
	WaitFor(t, "every Disconnected", 10*time.Second, func() bool {
		n := srv.NumDisconnected()
		for _, p := range players {
			n += p.NumDisconnected()
		}
		return n == 2*len(players)
	})
	unpaired := srv.Unpaired()
	for _, p := range players {
		unpaired += p.Unpaired()
	}
	if unpaired != 0 {
		t.Fatalf("%d Disconnected calls without a Connected", unpaired)
	}
	WaitGoroutines(t, base)
}

// WaitGoroutines fails unless the goroutine count falls back to base. A leak never
// ends; under the race detector on a loaded 2-core machine teardown once took over
// 10 s, so it waits 30 s. On failure the stacks say what is left.
func WaitGoroutines(t testing.TB, base int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines after 30 s, %d allowed; stacks:\n%s", runtime.NumGoroutine(), base, buf[:n])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// DialRefusedIsFast checks that a dial to a UDP port nobody holds fails at once with
// ErrConnect: the ICMP port unreachable (ECONNREFUSED) ends it, not its budget, so a
// player started before its server learns so at once.
func DialRefusedIsFast(t *testing.T, tr transport.Transport) {
	t.Helper()
	addr := FreeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := tr.Dial(ctx, addr, &Recorder{})
	if !errors.Is(err, transport.ErrConnect) {
		t.Fatalf("dial error %v does not wrap ErrConnect", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("refused dial took %v; ECONNREFUSED should end it at once", d)
	}
}

// OptionErrorsNameTheKey checks that the named transport refuses each bad option, a
// {key, value} pair, with an error that names the key: a mistyped -param must say
// which one it was.
func OptionErrorsNameTheKey(t *testing.T, name string, bad [][2]string) {
	t.Helper()
	for _, kv := range bad {
		_, err := transport.New(name, transport.Options{kv[0]: kv[1]})
		if err == nil || !strings.Contains(err.Error(), kv[0]) {
			t.Errorf("option %s=%s: error %v does not name the key", kv[0], kv[1], err)
		}
	}
}
