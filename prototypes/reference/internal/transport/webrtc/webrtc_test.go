package webrtc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/datachannel"

	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/transport/transporttest"
)

func mk(t *testing.T, opts transport.Options) transport.Transport {
	return transporttest.New(t, name, opts)
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, name, nil)
}

func TestConformanceReliableVariant(t *testing.T) {
	transporttest.Run(t, name, transport.Options{"unreliable": "reliable"})
}

// Fifty players connect with eight dials in flight, as the benchmark's client does.
func TestManyPeers(t *testing.T) {
	tr := mk(t, nil)
	srv := &transporttest.Recorder{Echo: true}
	ln, addr := transporttest.Listen(t, tr, srv)
	const peers, inFlight = 50, 8
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	conns := make([]transport.Conn, peers)
	errs := make(chan error, peers)
	sem := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	for i := range peers {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := tr.Dial(ctx, addr, &transporttest.Recorder{Echo: true})
			if err != nil {
				errs <- err
				return
			}
			conns[i] = c
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("dial: %v", err)
	}
	transporttest.WaitFor(t, "server to see all peers", time.Until(start.Add(10*time.Second)),
		func() bool { return srv.NumConnected() == peers })
	t.Logf("%d peers connected in %v", peers, time.Since(start))

	// Every peer's traffic works over the one shared server socket.
	for _, c := range conns {
		if err := c.Send(transport.Reliable, []byte("ping")); err != nil {
			t.Fatal(err)
		}
	}
	_ = ln.Close()
	transporttest.WaitFor(t, "server to report every disconnect", 5*time.Second,
		func() bool { return srv.NumDisconnected() == peers })
	for _, c := range conns {
		_ = c.Close()
	}
}

// unreliable=reliable: Unreliable messages travel on the reliable channel, arrive
// all and in order, and are still reported as Unreliable.
func TestUnreliableOnReliable(t *testing.T) {
	tr := mk(t, transport.Options{"unreliable": "reliable"})
	if caps := tr.Caps(); caps.NativeUnreliable || !caps.NativeReliable {
		t.Fatalf("caps %+v: want NativeUnreliable=false", caps)
	}
	_, addr := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	rec := &transporttest.Recorder{}
	c := transporttest.Dial(t, tr, addr, rec)
	const n = 300
	for i := range n {
		if err := c.Send(transport.Unreliable, []byte(fmt.Sprintf("u%04d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Send(transport.Unreliable, nil); err != nil { // empty message
		t.Fatal(err)
	}
	transporttest.WaitFor(t, "all echoes", 5*time.Second, func() bool { return rec.Count(transport.Unreliable) == n+1 })
	for i, m := range rec.Messages(transport.Unreliable)[:n] {
		if want := fmt.Sprintf("u%04d", i); string(m) != want {
			t.Fatalf("echo %d = %q, want %q (lost or reordered)", i, m, want)
		}
	}
	if rec.Count(transport.Reliable) != 0 {
		t.Fatal("Unreliable messages reported as Reliable")
	}
	wc := c.(*conn)
	sentRel := wc.rel.(*datachannel.DataChannel).MessagesSent()
	sentUnrel := wc.unrel.(*datachannel.DataChannel).MessagesSent()
	if sentUnrel != 0 || sentRel != n+1 {
		t.Fatalf("messages sent: reliable channel %d, unreliable channel %d; want %d and 0", sentRel, sentUnrel, n+1)
	}
}

// Default mode: Unreliable goes on its own channel.
func TestUnreliableNative(t *testing.T) {
	tr := mk(t, nil)
	_, addr := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	rec := &transporttest.Recorder{}
	c := transporttest.Dial(t, tr, addr, rec)
	for range 10 {
		if err := c.Send(transport.Unreliable, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	transporttest.WaitFor(t, "echoes", 5*time.Second, func() bool { return rec.Count(transport.Unreliable) >= 9 })
	if got := c.(*conn).unrel.(*datachannel.DataChannel).MessagesSent(); got != 10 {
		t.Fatalf("unreliable channel sent %d messages, want 10", got)
	}
}

func TestMaxMessage(t *testing.T) {
	tr := mk(t, transport.Options{"maxmsg": "100000"})
	if caps := tr.Caps(); caps.MaxReliableBytes != 100000 || caps.MaxUnreliableBytes != 100000 {
		t.Fatalf("caps %+v", caps)
	}
	_, addr := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	rec := &transporttest.Recorder{}
	c := transporttest.Dial(t, tr, addr, rec)
	big := bytes.Repeat([]byte{7}, 100000)
	if err := c.Send(transport.Reliable, big); err != nil {
		t.Fatal(err)
	}
	transporttest.WaitFor(t, "large echo", 5*time.Second, func() bool { return rec.Count(transport.Reliable) == 1 })
	if !bytes.Equal(rec.Messages(transport.Reliable)[0], big) {
		t.Fatal("large message corrupted")
	}
	for _, ch := range []transport.Channel{transport.Reliable, transport.Unreliable} {
		if err := c.Send(ch, make([]byte, 100001)); !errors.Is(err, transport.ErrTooLarge) {
			t.Fatalf("%s send above maxmsg: %v, want ErrTooLarge", ch, err)
		}
	}
}

func TestLibRTT(t *testing.T) {
	tr := mk(t, nil)
	_, addr := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	rec := &transporttest.Recorder{}
	c := transporttest.Dial(t, tr, addr, rec)
	est, ok := c.(transport.RTTEstimator)
	if !ok {
		t.Fatal("conn does not implement RTTEstimator")
	}
	for i := range 20 {
		if err := c.Send(transport.Reliable, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	var rtt time.Duration
	transporttest.WaitFor(t, "an SCTP RTT sample", 5*time.Second, func() bool {
		var ok bool
		rtt, ok = est.LibRTT()
		return ok
	})
	if rtt <= 0 || rtt > time.Second {
		t.Fatalf("LibRTT = %v on loopback", rtt)
	}
	t.Logf("SCTP SRTT %v", rtt)
}

func TestRemoteAddrIsICEAddress(t *testing.T) {
	tr := mk(t, nil)
	_, addr := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	c := transporttest.Dial(t, tr, addr, &transporttest.Recorder{})
	if c.RemoteAddr() != addr { // server's UDP port = its TCP signalling port
		t.Fatalf("RemoteAddr %q, want %q", c.RemoteAddr(), addr)
	}
}

func TestServerOnlyOneUDPPort(t *testing.T) {
	tr := mk(t, nil)
	ln, _ := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	port := ln.Addr()[strings.LastIndex(ln.Addr(), ":")+1:]
	if _, err := net.ListenPacket("udp4", "127.0.0.1:"+port); err == nil {
		t.Fatal("UDP port of the listener is not bound")
	}
}

func TestOptionErrors(t *testing.T) {
	transporttest.OptionErrorsNameTheKey(t, name, [][2]string{
		{"unreliable", "maybe"}, {"sockbuf", "-1"}, {"maxmsg", "big"},
		{"disconnect", "soon"}, {"failed", "0s"}, {"keepalive", "x"}, {"log", "loud"}, {"bogus", "1"},
	})
	if _, err := transport.New(name, transport.Options{
		"unreliable": "reliable", "iface": "lo", "sockbuf": "1048576", "maxmsg": "65536",
		"disconnect": "3s", "failed": "6s", "keepalive": "1s", "log": "disabled",
	}); err != nil {
		t.Fatal(err)
	}
}

// iface=lo restricts candidates to the loopback interface and still connects.
func TestIfaceOption(t *testing.T) {
	tr := mk(t, transport.Options{"iface": "lo"})
	srv := &transporttest.Recorder{Echo: true}
	_, addr := transporttest.Listen(t, tr, srv)
	_ = transporttest.Dial(t, tr, addr, &transporttest.Recorder{})
	transporttest.WaitFor(t, "connection", 5*time.Second, func() bool { return srv.NumConnected() == 1 })
}

func TestGarbageOfferRejected(t *testing.T) {
	tr := mk(t, nil)
	_, addr := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	_, err := postOffer(context.Background(), "http://"+addr+"/offer", "v=0 garbage")
	if err == nil {
		t.Fatal("garbage offer answered")
	}
	// A garbage datagram on the shared UDP socket must not disturb anything.
	u, err := net.Dial("udp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = u.Write([]byte{0x00, 0x01, 0xff, 0x13, 0x37})
	_ = u.Close()
	rec := &transporttest.Recorder{}
	c := transporttest.Dial(t, tr, addr, rec)
	_ = c.Send(transport.Reliable, []byte("ok"))
	transporttest.WaitFor(t, "echo after garbage", 5*time.Second, func() bool { return rec.Count(transport.Reliable) == 1 })
}

// A local Close reports nil once; the other side gets a reason, once.
func TestDisconnectReasons(t *testing.T) {
	tr := mk(t, nil)
	srv := &transporttest.Recorder{}
	ln, addr := transporttest.Listen(t, tr, srv)
	cli := &transporttest.Recorder{}
	c := transporttest.Dial(t, tr, addr, cli)
	// The server reports Connected just after Dial returns; a peer closed before
	// that is never reported at all.
	transporttest.WaitFor(t, "server connect", 5*time.Second, func() bool { return srv.NumConnected() == 1 })
	_ = c.Close()
	_ = c.Close()
	srvErr := srv.NextReason(t, "server disconnect", 5*time.Second)
	if err := cli.NextReason(t, "client disconnect", 5*time.Second); err != nil {
		t.Fatalf("local Close reported %v, want nil", err)
	}
	if srvErr == nil {
		t.Fatal("server got a nil reason for a client that went away")
	}

	cli2 := &transporttest.Recorder{}
	_ = transporttest.Dial(t, tr, addr, cli2)
	transporttest.WaitFor(t, "server connect", 5*time.Second, func() bool { return srv.NumConnected() == 2 })
	_ = ln.Close()
	if cli2.NextReason(t, "client disconnect after server close", 5*time.Second) == nil {
		t.Fatal("client got a nil reason for a server that went away")
	}
	time.Sleep(100 * time.Millisecond)
	if n := srv.NumDisconnected(); n != 2 {
		t.Fatalf("server reported %d disconnects, want 2", n)
	}
	if n := cli.NumDisconnected() + cli2.NumDisconnected(); n != 2 {
		t.Fatalf("clients reported %d disconnects, want 2", n)
	}
}

// A server that vanishes without closing anything (its UDP socket just goes
// silent) is detected by the ICE timeouts within a few seconds.
func TestSilentServerDetected(t *testing.T) {
	// log=disabled: closing the socket under the mux makes it log a read error.
	tr := mk(t, transport.Options{"disconnect": "1s", "failed": "2s", "keepalive": "200ms", "log": "disabled"})
	ln, addr := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	rec := &transporttest.Recorder{}
	_ = transporttest.Dial(t, tr, addr, rec)
	_ = ln.(*listener).udp.Close()
	if err := rec.NextReason(t, "client to notice the server went silent", 5*time.Second); err == nil {
		t.Fatal("nil reason for a vanished server")
	}
}

// Dial gives up when its context ends even if the server accepts TCP but never answers.
func TestDialHonoursContext(t *testing.T) {
	hole, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Accept and hold connections without ever answering.
	held := make(chan net.Conn, 16)
	defer func() {
		hole.Close()
		for len(held) > 0 {
			_ = (<-held).Close()
		}
	}()
	go func() {
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = mk(t, nil).Dial(ctx, hole.Addr().String(), &transporttest.Recorder{})
	if !errors.Is(err, transport.ErrConnect) {
		t.Fatalf("dial error %v does not wrap ErrConnect", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("dial took %v with a 300 ms context", d)
	}
}

func TestServerSocketBuffers(t *testing.T) {
	ln, _ := transporttest.Listen(t, mk(t, nil), &transporttest.Recorder{Echo: true})
	rcv, snd, err := sockBufs(ln.(*listener).udp)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SO_RCVBUF %d SO_SNDBUF %d (kernel doubles the set value)", rcv, snd)
	// Without CAP_NET_ADMIN the kernel caps the buffers at rmem_max/wmem_max.
	if os.Geteuid() == 0 && (rcv < 4<<20 || snd < 4<<20) {
		t.Fatalf("socket buffers %d/%d below the 4 MiB asked", rcv, snd)
	}
}

func TestCandidateFilters(t *testing.T) {
	tr := mk(t, nil).(*Transport)
	ifF, ipF, err := tr.filters(net.IPv4(127, 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	ifs, _ := net.Interfaces()
	for _, ifc := range ifs {
		if want := ifc.Flags&net.FlagLoopback != 0; ifF(ifc.Name) != want {
			t.Errorf("interface %s kept=%v for 127.0.0.1", ifc.Name, !want)
		}
	}
	if !ipF(net.IPv4(127, 0, 0, 1)) || ipF(net.IPv4(10, 0, 0, 1)) {
		t.Error("IP filter does not keep exactly 127.0.0.1")
	}
	// 127.0.0.2 is not an interface address but lo's subnet holds it.
	if ifF, _, err := tr.filters(net.IPv4(127, 0, 0, 2)); err != nil || !ifF("lo") {
		t.Errorf("127.0.0.2: err %v", err)
	}
	if ifF, ipF, err := tr.filters(net.IPv4zero); err != nil || ifF != nil || ipF != nil {
		t.Error("unspecified address should not filter")
	}
	if _, _, err := tr.filters(net.IPv4(198, 51, 100, 77)); err == nil {
		t.Error("an address on no interface should fail")
	}
	tr = mk(t, transport.Options{"iface": "veth7"}).(*Transport)
	if ifF, ipF, _ := tr.filters(net.IPv4(127, 0, 0, 1)); !ifF("veth7") || ifF("lo") || ipF != nil {
		t.Error("iface option not applied")
	}
}
