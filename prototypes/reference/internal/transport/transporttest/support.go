package transporttest

// The small helpers every transport's tests share: make a transport, listen, dial,
// connect a pair, wait for an outcome.

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"netstick/prototypes/reference/internal/transport"
)

// New makes the transport registered as name, failing the test on an error.
func New(t testing.TB, name string, opts transport.Options) transport.Transport {
	t.Helper()
	tr, err := transport.New(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// FreeAddr returns a loopback address whose port is free for both TCP and UDP: every
// transport family can bind it (webrtc binds both), and nobody answers a dial to it.
func FreeAddr(t testing.TB) string {
	t.Helper()
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
			return fmt.Sprintf("127.0.0.1:%d", port)
		}
	}
	t.Fatal("no free port")
	return ""
}

// Listen starts a listener of tr at a FreeAddr, as the server binds its configured
// port, and returns it with that address; it is closed at the test's end.
func Listen(t testing.TB, tr transport.Transport, h transport.Handler) (transport.Listener, string) {
	t.Helper()
	addr := FreeAddr(t)
	ln, err := tr.Listen(addr, h)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln, addr
}

// Dial connects to addr within 10 s (the contract's default connect budget); the
// connection is closed at the test's end.
func Dial(t testing.TB, tr transport.Transport, addr string, h transport.Handler) transport.Conn {
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

// Pair connects one player to a new listener of tr with handler srv and returns once
// both sides hold the connection: the server may report it after Dial has returned.
func Pair(t testing.TB, tr transport.Transport, srv *Recorder) (cli *Recorder, ln transport.Listener, sc, cc transport.Conn) {
	t.Helper()
	cli = &Recorder{}
	ln, addr := Listen(t, tr, srv)
	cc = Dial(t, tr, addr, cli)
	<-cli.Conns() // Dial reports Connected before it returns
	select {
	case sc = <-srv.Conns():
	case <-time.After(5 * time.Second):
		t.Fatal("server did not report the connection")
	}
	return cli, ln, sc, cc
}

// WaitFor polls cond until it holds and fails the test if it still does not after d.
// Transports report from their own goroutines, so tests wait for the outcome instead
// of sleeping a guessed time. cond is checked at least once, even when d has passed.
func WaitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ManyPlayers connects players players to an echoing listener of tr, has each send a
// 100 B Unreliable message at 60 Hz for ticks ticks, as players send their input, and
// returns a count of the echoes the players have received so far.
func ManyPlayers(t testing.TB, tr transport.Transport, players, ticks int) (echoes func() int) {
	t.Helper()
	_, addr := Listen(t, tr, &Recorder{Echo: true})
	recs := make([]*Recorder, players)
	conns := make([]transport.Conn, players)
	for i := range conns {
		recs[i] = &Recorder{}
		conns[i] = Dial(t, tr, addr, recs[i])
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
	return func() int {
		n := 0
		for _, r := range recs {
			n += r.NumReceived()
		}
		return n
	}
}
