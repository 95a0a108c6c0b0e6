package udp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/transport/transporttest"
)

func mk(t *testing.T, opts transport.Options) transport.Transport {
	return transporttest.New(t, "udp", opts)
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, "udp", nil)
}

func TestRegistered(t *testing.T) {
	tr := transporttest.New(t, "udp", transport.Options{"timeout_ms": "500", "sockbuf": "0"})
	if tr.Name() != "udp" || tr.Caps().NativeReliable || !tr.Caps().NativeUnreliable {
		t.Fatalf("unexpected transport %s caps %+v", tr.Name(), tr.Caps())
	}
}

func TestOptionErrorsNameTheKey(t *testing.T) {
	transporttest.OptionErrorsNameTheKey(t, "udp", [][2]string{
		{"timeout_ms", "abc"}, {"timeout_ms", "5"}, {"sockbuf", "-1"}, {"bogus", "1"},
	})
}

// An idle but alive pair survives on keepalives; a peer that goes silent without a
// disconnect datagram is expired by the timeout, on either side.
func TestTimeoutAndKeepalive(t *testing.T) {
	tr := mk(t, transport.Options{"timeout_ms": "300"})
	srv := &transporttest.Recorder{Echo: true}
	_, addr := transporttest.Listen(t, tr, srv)
	cli := &transporttest.Recorder{}
	_ = transporttest.Dial(t, tr, addr, cli)
	time.Sleep(time.Second) // idle for > 3 timeouts
	if srv.NumDisconnected() != 0 || cli.NumDisconnected() != 0 {
		t.Fatal("idle connection dropped despite keepalives")
	}

	// A client that connects by hand and then says nothing.
	raw, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_, _ = raw.Write(connectMsg)
	transporttest.WaitFor(t, "silent client to connect", 3*time.Second, func() bool { return srv.NumConnected() == 2 })
	if err := srv.NextReason(t, "server to expire the silent client", 3*time.Second); err == nil || !strings.Contains(err.Error(), "no datagram") {
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
	col := &transporttest.Recorder{}
	c2, err := tr.Dial(context.Background(), pc.LocalAddr().String(), col)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := col.NextReason(t, "client to expire the silent server", 3*time.Second); err == nil || !strings.Contains(err.Error(), "no datagram") {
		t.Fatalf("client disconnect reason %v", err)
	}
	if srv.Unpaired()+cli.Unpaired()+col.Unpaired() != 0 {
		t.Fatal("Disconnected reported more often than Connected")
	}
}

// Hostile datagrams (garbage, truncated control messages, data from strangers) must
// be dropped without harming the listener.
func TestHostileDatagrams(t *testing.T) {
	tr := mk(t, nil)
	srv := &transporttest.Recorder{Echo: true}
	_, addr := transporttest.Listen(t, tr, srv)
	raw, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, d := range [][]byte{{}, {0}, {1, 2, 3}, {tagConnect}, {tagConnect, 'x'}, {tagAccept, 'N', 'S', 'U', '1'},
		{tagDisconnect}, {tagKeepalive}, {0xff, 0xff}, make([]byte, 9000)} {
		_, _ = raw.Write(d)
	}
	cli := &transporttest.Recorder{}
	c := transporttest.Dial(t, tr, addr, cli)
	if err := c.Send(transport.Reliable, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	transporttest.WaitFor(t, "echo", 3*time.Second, func() bool { return cli.NumReceived() == 1 })
	if n := srv.NumConnected(); n != 1 {
		t.Fatalf("hostile datagrams created connections: %d connected", n)
	}
}

func TestDialRefusedIsFast(t *testing.T) { transporttest.DialRefusedIsFast(t, mk(t, nil)) }

func TestSizeLimits(t *testing.T) {
	tr := mk(t, nil)
	_, addr := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	col := &transporttest.Recorder{}
	c := transporttest.Dial(t, tr, addr, col)
	for _, ch := range []transport.Channel{transport.Reliable, transport.Unreliable} {
		if err := c.Send(ch, make([]byte, MaxMessageBytes)); err != nil {
			t.Fatalf("%v send of max size: %v", ch, err)
		}
		if err := c.Send(ch, make([]byte, MaxMessageBytes+1)); !errors.Is(err, transport.ErrTooLarge) {
			t.Fatalf("%v send of max+1: %v, want ErrTooLarge", ch, err)
		}
	}
	transporttest.WaitFor(t, "max-size echoes", 3*time.Second, func() bool { return col.NumReceived() >= 2 })
	if err := c.Send(transport.Channel(7), []byte("x")); err == nil {
		t.Fatal("send on unknown channel succeeded")
	}
}

// Many players at 60 Hz on one server socket: the single receive goroutine keeps up.
func TestManyPlayers(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const players, ticks = 200, 60
	echoes := transporttest.ManyPlayers(t, mk(t, nil), players, ticks)
	time.Sleep(300 * time.Millisecond)
	got := echoes()
	if want := players * ticks; got < want*99/100 {
		t.Fatalf("%d of %d echoes", got, want)
	}
	fmt.Printf("many players: %d/%d echoes\n", got, players*ticks)
}

func TestNoGoroutineLeak(t *testing.T) { transporttest.NoGoroutineLeak(t, mk(t, nil)) }
