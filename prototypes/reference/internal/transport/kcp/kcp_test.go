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

func mk(t *testing.T, opts transport.Options) transport.Transport {
	return transporttest.New(t, "kcp", opts)
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, "kcp", nil)
}

func TestRegisteredAndCaps(t *testing.T) {
	tr := transporttest.New(t, "kcp", transport.Options{"mtu": "1400", "rcvwnd": "128"})
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
	transporttest.OptionErrorsNameTheKey(t, "kcp", [][2]string{
		{"nodelay", "2"}, {"interval_ms", "x"}, {"resend", "-1"}, {"nc", "yes"}, {"sndwnd", "0"},
		{"rcvwnd", "70000"}, {"mtu", "20"}, {"timeout_ms", "10"}, {"sockbuf", "-5"}, {"bogus", "1"},
	})
}

// setup connects one player to an echoing server.
func setup(t *testing.T, opts transport.Options) (tr transport.Transport, srv *transporttest.Recorder, ln transport.Listener, cli *transporttest.Recorder, c transport.Conn) {
	t.Helper()
	tr = mk(t, opts)
	srv, cli = &transporttest.Recorder{Echo: true}, &transporttest.Recorder{}
	ln, addr := transporttest.Listen(t, tr, srv)
	return tr, srv, ln, cli, transporttest.Dial(t, tr, addr, cli)
}

func TestLibRTTAfterTraffic(t *testing.T) {
	_, _, _, cli, c := setup(t, nil)
	for i := range 20 {
		if err := c.Send(transport.Reliable, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	transporttest.WaitFor(t, "echoes", 3*time.Second, func() bool { return cli.NumReceived() == 20 })
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
		n := cli.NumReceived()
		if err := c.Send(tc.ch, want); err != nil {
			t.Fatalf("send %v %d B: %v", tc.ch, tc.size, err)
		}
		transporttest.WaitFor(t, "echo", 5*time.Second, func() bool { return cli.NumReceived() == n+1 })
		ch, got := cli.Last()
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

// silentServer is a bare kcp-go server that answers a player's hello and then says
// nothing and reads nothing for hold. It returns the server's address.
func silentServer(t *testing.T, hold time.Duration) string {
	t.Helper()
	kl, err := kcpgo.ListenWithOptions("127.0.0.1:0", nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kl.Close() })
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
		time.Sleep(hold)
	}()
	return kl.Addr().String()
}

// kcpPush is a KCP data segment (IKCP_CMD_PUSH, 4 bytes) from nobody: it looks like
// KCP but no hello came before it.
func kcpPush() []byte {
	b := make([]byte, 24+4)
	b[4] = 81 // IKCP_CMD_PUSH
	b[20] = 4 // len
	copy(b[24:], "\x13\x00\x00\x00")
	return b
}

// An idle but alive pair survives on keepalives; a peer that goes silent without a
// close message is expired by the timeout, on either side.
func TestTimeoutAndKeepalive(t *testing.T) {
	opts := transport.Options{"timeout_ms": "300"}
	_, srv, ln, cli, _ := setup(t, opts)
	time.Sleep(time.Second)
	if srv.NumDisconnected() != 0 || cli.NumDisconnected() != 0 {
		t.Fatal("idle connection dropped despite keepalives")
	}

	silentClient(t, ln.Addr())
	err := srv.NextReason(t, "server to expire the silent client", 3*time.Second)
	if err == nil || !strings.Contains(err.Error(), "no message") {
		t.Fatalf("server disconnect reason %v", err)
	}

	col := &transporttest.Recorder{}
	c, err := mk(t, opts).Dial(context.Background(), silentServer(t, 3*time.Second), col)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = col.NextReason(t, "client to expire the silent server", 3*time.Second)
	if err == nil || !strings.Contains(err.Error(), "no message") {
		t.Fatalf("client disconnect reason %v", err)
	}
}

// Garbage, KCP-looking datagrams without a hello, and a KCP session from a stranger
// never become connections and never break the listener.
func TestHostileDatagrams(t *testing.T) {
	tr := mk(t, transport.Options{"timeout_ms": "300"})
	srv := &transporttest.Recorder{Echo: true}
	_, addr := transporttest.Listen(t, tr, srv)
	raw, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, d := range [][]byte{{}, {0}, make([]byte, 23), make([]byte, 24), kcpPush(), bytes.Repeat([]byte{0xff}, 1400)} {
		_, _ = raw.Write(d)
	}
	cli := &transporttest.Recorder{}
	c := transporttest.Dial(t, tr, addr, cli)
	if err := c.Send(transport.Reliable, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	transporttest.WaitFor(t, "echo", 3*time.Second, func() bool { return cli.NumReceived() == 1 })
	time.Sleep(600 * time.Millisecond) // the stranger's session passes its hello deadline
	if n, d := srv.NumConnected(), srv.NumDisconnected(); n != 1 || d != 0 {
		t.Fatalf("connected %d disconnected %d, want 1 and 0", n, d)
	}
}

func TestDialRefusedIsFast(t *testing.T) { transporttest.DialRefusedIsFast(t, mk(t, nil)) }

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
	_, err = mk(t, nil).Dial(ctx, pc.LocalAddr().String(), &transporttest.Recorder{})
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
	_, addr := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	c2 := transporttest.Dial(t, tr, addr, cli2)
	const n, size = 50, 60000
	msg := make([]byte, size)
	for i := range n {
		msg[0], msg[size-1] = byte(i), byte(i)
		if err := c2.Send(transport.Reliable, msg); err != nil {
			t.Fatal(err)
		}
	}
	transporttest.WaitFor(t, "burst echoes", 15*time.Second, func() bool { return got.Load() == n })
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
	const players, ticks = 100, 60
	echoes := transporttest.ManyPlayers(t, mk(t, nil), players, ticks)
	transporttest.WaitFor(t, "all echoes", 10*time.Second, func() bool { return echoes() == players*ticks })
}

// kcp-go's global schedulers were started at package init and are part of the baseline.
func TestNoGoroutineLeak(t *testing.T) { transporttest.NoGoroutineLeak(t, mk(t, nil)) }

// Close must not hang behind a Send blocked on a full window (a peer that stopped
// reading), and the blocked Send must return ErrClosed.
func TestCloseReleasesBlockedSend(t *testing.T) {
	addr := silentServer(t, 5*time.Second) // never reads again: its window fills up
	tr := mk(t, transport.Options{"sndwnd": "8", "rcvwnd": "8"})
	c, err := tr.Dial(context.Background(), addr, &transporttest.Recorder{})
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
	ln, err := mk(t, nil).Listen("127.0.0.1:0", &transporttest.Recorder{})
	if err != nil {
		t.Fatal(err)
	}
	kcpish := kcpPush()
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
	transporttest.WaitGoroutines(t, base)
}
