package quic

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/transport/transporttest"
)

func mk(t *testing.T, opts transport.Options) transport.Transport {
	return transporttest.New(t, "quic", opts)
}

func TestConformanceDatagram(t *testing.T) { transporttest.Run(t, "quic", nil) }

func TestConformanceStream(t *testing.T) {
	transporttest.Run(t, "quic", transport.Options{"unreliable": "stream"})
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts transport.Options
		want string // substring of the error, "" for success
	}{
		{nil, ""},
		{transport.Options{"unreliable": "datagram", "idle_timeout_ms": "1500"}, ""},
		{transport.Options{"bogus": "1"}, `"bogus"`},
		{transport.Options{"unreliable": "maybe"}, "unreliable"},
		{transport.Options{"idle_timeout_ms": "0"}, "idle_timeout_ms"},
		{transport.Options{"idle_timeout_ms": "fast"}, "idle_timeout_ms"},
	} {
		_, err := transport.New("quic", tc.opts)
		if tc.want == "" && err != nil {
			t.Errorf("%v: %v", tc.opts, err)
		}
		if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: got %v, want an error naming %s", tc.opts, err, tc.want)
		}
	}
	tr, _ := New(transport.Options{"idle_timeout_ms": "1500"})
	if c := tr.config(false); c.MaxIdleTimeout != 1500*time.Millisecond || c.KeepAlivePeriod != 500*time.Millisecond || !c.EnableDatagrams {
		t.Errorf("config from idle_timeout_ms=1500: %+v", c)
	}
}

func TestCaps(t *testing.T) {
	d, _ := New(nil)
	if c := d.Caps(); !c.NativeReliable || !c.NativeUnreliable || c.MaxUnreliableBytes != MaxDatagramBytes {
		t.Errorf("datagram caps: %+v", c)
	}
	s, _ := New(transport.Options{"unreliable": "stream"})
	if c := s.Caps(); !c.NativeReliable || c.NativeUnreliable || c.MaxUnreliableBytes < 1<<20 {
		t.Errorf("stream caps: %+v", c)
	}
}

// pair connects one player to a new server; both sides record what they are told.
func pair(t *testing.T, opts transport.Options) (srv, cli *transporttest.Recorder, ln transport.Listener, sc, cc transport.Conn) {
	t.Helper()
	srv = &transporttest.Recorder{}
	cli, ln, sc, cc = transporttest.Pair(t, mk(t, opts), srv)
	return srv, cli, ln, sc, cc
}

func TestDatagramLimit(t *testing.T) {
	srv, _, _, _, cc := pair(t, nil)
	if err := cc.Send(transport.Unreliable, make([]byte, MaxDatagramBytes)); err != nil {
		t.Fatalf("datagram of exactly %d B: %v", MaxDatagramBytes, err)
	}
	transporttest.WaitFor(t, "the datagram", 5*time.Second, func() bool { return srv.Count(transport.Unreliable) >= 1 })
	if got := len(srv.Messages(transport.Unreliable)[0]); got != MaxDatagramBytes {
		t.Fatalf("received %d B", got)
	}
	if err := cc.Send(transport.Unreliable, make([]byte, MaxDatagramBytes+1)); !errors.Is(err, transport.ErrTooLarge) {
		t.Fatalf("datagram of %d B: got %v, want ErrTooLarge", MaxDatagramBytes+1, err)
	}
	// quic-go's own refusal (above its current packet-size estimate) maps to ErrTooLarge.
	c := cc.(*conn)
	err := c.qc.SendDatagram(make([]byte, 1500))
	if err == nil {
		t.Fatal("quic-go accepted a 1500 B datagram")
	}
	if mapped := c.sendErr("datagram", 1500, err); !errors.Is(mapped, transport.ErrTooLarge) {
		t.Fatalf("quic-go error %v mapped to %v, want ErrTooLarge", err, mapped)
	}
}

func TestStreamModeCarriesUnreliableOnStream(t *testing.T) {
	srv, _, _, _, cc := pair(t, transport.Options{"unreliable": "stream"})
	big := make([]byte, 5000) // far above any datagram
	if err := cc.Send(transport.Unreliable, big); err != nil {
		t.Fatal(err)
	}
	transporttest.WaitFor(t, "the message", 5*time.Second, func() bool { return srv.Count(transport.Unreliable) >= 1 })
}

func TestLibRTT(t *testing.T) {
	_, _, _, sc, cc := pair(t, nil)
	for range 20 {
		_ = cc.Send(transport.Reliable, []byte("ping"))
		_ = sc.Send(transport.Unreliable, []byte("pong"))
		time.Sleep(time.Millisecond)
	}
	for _, c := range []transport.Conn{sc, cc} {
		rtt, ok := c.(transport.RTTEstimator).LibRTT()
		if !ok || rtt <= 0 || rtt > time.Second {
			t.Fatalf("LibRTT = %v, %v", rtt, ok)
		}
	}
}

func TestDisconnectReasons(t *testing.T) {
	// Listener.Close: the client learns it with application error code 1; the server
	// side of a local close reports nil.
	srv, cli, ln, _, _ := pair(t, nil)
	_ = ln.Close()
	var ae *quicgo.ApplicationError
	if err := cli.NextReason(t, "client told of the server shutdown", 3*time.Second); !errors.As(err, &ae) || !ae.Remote || ae.ErrorCode != codeShutdown {
		t.Fatalf("client disconnect reason %v, want remote application error %d", err, codeShutdown)
	}
	// Listener.Close waits for the server's Disconnected calls.
	select {
	case err := <-srv.Reasons():
		if err != nil {
			t.Fatalf("server disconnect after Listener.Close: %v, want nil", err)
		}
	default:
		t.Fatal("Listener.Close returned before Disconnected")
	}

	// Conn.Close on the client: nil locally, a remote error on the server.
	srv, cli, _, _, cc := pair(t, nil)
	_ = cc.Close()
	if err := <-cli.Reasons(); err != nil {
		t.Fatalf("client disconnect after its own Close: %v", err)
	}
	if err := <-srv.Reasons(); !errors.As(err, &ae) || !ae.Remote || ae.ErrorCode != codeNormal {
		t.Fatalf("server disconnect reason %v, want remote application error 0", err)
	}
	if err := cc.Send(transport.Unreliable, []byte("x")); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
}

func TestBadPreambleIsRejected(t *testing.T) {
	tr, _ := New(nil)
	srv := &transporttest.Recorder{}
	ln, _ := transporttest.Listen(t, tr, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	udp, err := net.ListenUDP("udp4", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	qtr := &quicgo.Transport{Conn: udp}
	defer qtr.Close()
	raddr, _ := net.ResolveUDPAddr("udp", ln.Addr())
	qc, err := qtr.Dial(ctx, raddr, clientTLS(), tr.config(false))
	if err != nil {
		t.Fatal(err)
	}
	st, err := qc.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = st.Write([]byte{0, 0, 0, 1, 0, 42}) // a frame without the preamble
	select {
	case <-qc.Context().Done():
	case <-time.After(3 * time.Second):
		t.Fatal("server kept a connection without the preamble")
	}
	var ae *quicgo.ApplicationError
	if err := context.Cause(qc.Context()); !errors.As(err, &ae) || ae.ErrorCode != codeProtocol {
		t.Fatalf("close reason %v, want application error %d", err, codeProtocol)
	}
	select {
	case <-srv.Conns():
		t.Fatal("server reported a connection without the preamble")
	default:
	}
}

func TestCorruptFrameDisconnects(t *testing.T) {
	srv, _, _, _, cc := pair(t, nil)
	c := cc.(*conn)
	c.wmu.Lock()
	_, _ = c.st.Write([]byte{0xff, 0xff, 0xff, 0xff, 0}) // length above the framing limit
	c.wmu.Unlock()
	if err := srv.NextReason(t, "server to drop the corrupt stream", 3*time.Second); err == nil {
		t.Fatal("corrupt stream reported as a clean disconnect")
	}
}

func TestNoGoroutineLeak(t *testing.T) { transporttest.NoGoroutineLeak(t, mk(t, nil)) }
