package ws

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/transport/transporttest"
)

func TestConformance(t *testing.T) {
	transporttest.Run(t, "ws", nil)
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts transport.Options
		want string
	}{
		{nil, ""},
		{transport.Options{"write_timeout_ms": "250"}, ""},
		{transport.Options{"bogus": "1"}, `"bogus"`},
		{transport.Options{"write_timeout_ms": "-1"}, "write_timeout_ms"},
		{transport.Options{"write_timeout_ms": "soon"}, "write_timeout_ms"},
	} {
		_, err := transport.New("ws", tc.opts)
		if tc.want == "" && err != nil {
			t.Errorf("%v: %v", tc.opts, err)
		}
		if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: got %v, want an error naming %s", tc.opts, err, tc.want)
		}
	}
	tr, _ := New(transport.Options{"write_timeout_ms": "250"})
	if tr.writeTimeout != 250*time.Millisecond {
		t.Errorf("write timeout %v", tr.writeTimeout)
	}
	if c := tr.Caps(); !c.NativeReliable || c.NativeUnreliable || c.MaxReliableBytes != MaxMessageBytes || c.MaxUnreliableBytes != MaxMessageBytes {
		t.Errorf("caps %+v", c)
	}
}

// pair connects one player to a new server with handler srv.
func pair(t *testing.T, opts transport.Options, srv *transporttest.Recorder) (cli *transporttest.Recorder, ln transport.Listener, sc, cc transport.Conn) {
	t.Helper()
	tr, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return transporttest.Pair(t, tr, srv)
}

func TestServerGoneTCPClose(t *testing.T) {
	// The server's TCP connection vanishes without a close frame (a crashed server).
	srv := &transporttest.Recorder{}
	cli, _, sc, _ := pair(t, nil, srv)
	_ = sc.(*conn).raw.Close()
	if err := cli.NextReason(t, "client after server TCP close", 3*time.Second); err == nil {
		t.Fatal("client reported a clean disconnect")
	}
}

func TestListenerCloseReason(t *testing.T) {
	srv := &transporttest.Recorder{}
	cli, ln, _, _ := pair(t, nil, srv)
	_ = ln.Close()
	if err := cli.NextReason(t, "client", 3*time.Second); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("client disconnect reason %v, want status 1001", err)
	}
	select {
	case err := <-srv.Reasons():
		if err != nil {
			t.Fatalf("server side of Listener.Close reported %v, want nil", err)
		}
	default:
		t.Fatal("Listener.Close returned before Disconnected")
	}
	if _, err := net.DialTimeout("tcp", ln.Addr(), time.Second); err == nil {
		t.Fatal("HTTP server still accepting after Listener.Close")
	}
}

func TestLocalCloseReportsNil(t *testing.T) {
	srv := &transporttest.Recorder{}
	cli, _, _, cc := pair(t, nil, srv)
	_ = cc.Close()
	if err := cli.NextReason(t, "client", 3*time.Second); err != nil {
		t.Fatalf("client's own Close reported %v", err)
	}
	if err := srv.NextReason(t, "server", 3*time.Second); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("server disconnect reason %v, want status 1000", err)
	}
}

func TestHostileMessagesDropped(t *testing.T) {
	srv := &transporttest.Recorder{}
	_, _, _, cc := pair(t, nil, srv)
	ws := cc.(*conn).ws
	ctx := context.Background()
	_ = ws.Write(ctx, websocket.MessageText, []byte("\x00hello"))
	_ = ws.Write(ctx, websocket.MessageBinary, nil)
	_ = ws.Write(ctx, websocket.MessageBinary, []byte{7, 1, 2})
	if err := cc.Send(transport.Unreliable, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	transporttest.WaitFor(t, "the valid message after hostile ones", 3*time.Second, func() bool { return srv.Count(transport.Unreliable) > 0 })
	if n := len(srv.Messages(transport.Reliable)); n != 0 {
		t.Fatalf("%d hostile messages delivered", n)
	}
	if got := srv.Messages(transport.Unreliable); len(got) != 1 || string(got[0]) != "ok" {
		t.Fatalf("got %q", got)
	}
}

func TestOversizedMessageDisconnects(t *testing.T) {
	srv := &transporttest.Recorder{}
	_, _, _, cc := pair(t, nil, srv)
	if err := cc.Send(transport.Reliable, make([]byte, MaxMessageBytes+1)); !errors.Is(err, transport.ErrTooLarge) {
		t.Fatalf("send above the limit: %v", err)
	}
	if err := cc.Send(transport.Reliable, make([]byte, MaxMessageBytes)); err != nil {
		t.Fatalf("send at the limit: %v", err)
	}
	// Bypass Send: a message above the server's read limit ends the connection.
	_ = cc.(*conn).ws.Write(context.Background(), websocket.MessageBinary, make([]byte, MaxMessageBytes+2))
	if err := srv.NextReason(t, "server", 3*time.Second); err == nil {
		t.Fatal("oversized message: clean disconnect")
	}
	if got := srv.Messages(transport.Reliable); len(got) != 1 || len(got[0]) != MaxMessageBytes {
		t.Fatalf("message at the limit not delivered intact (%d messages)", len(got))
	}
}

func TestOtherPathIs404(t *testing.T) {
	tr, _ := New(nil)
	ln, err := tr.Listen("127.0.0.1:0", &transporttest.Recorder{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	resp, err := http.Get("http://" + ln.Addr() + "/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestWriteTimeout(t *testing.T) {
	// The server's handler stops reading, so TCP fills up and the client's Send blocks.
	release := make(chan struct{})
	defer close(release) // before the listener closes: Listener.Close waits for handlers
	srv := &transporttest.Recorder{OnReceive: func(transport.Conn, transport.Channel, []byte) { <-release }}
	cli, _, _, cc := pair(t, transport.Options{"write_timeout_ms": "200"}, srv)
	msg := make([]byte, 64<<10)
	var err error
	start := time.Now()
	for time.Since(start) < 10*time.Second {
		if err = cc.Send(transport.Reliable, msg); err != nil {
			break
		}
	}
	if !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("blocked send: got %v, want ErrClosed", err)
	}
	if err := cli.NextReason(t, "client", 3*time.Second); err == nil || !strings.Contains(err.Error(), "write blocked") {
		t.Fatalf("client disconnect reason %v, want the write timeout", err)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	transporttest.NoGoroutineLeak(t, transporttest.New(t, "ws", nil))
}

// BenchmarkSend100 measures one 100 B Send plus its delivery (allocations per message
// are what matter at 60 Hz × 200 players).
func BenchmarkSend100(b *testing.B) {
	srv := &countingHandler{got: make(chan struct{}, 1)}
	tr, _ := New(nil)
	ln, err := tr.Listen("127.0.0.1:0", srv)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := tr.Dial(context.Background(), ln.Addr(), &countingHandler{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	msg := make([]byte, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := c.Send(transport.Unreliable, msg); err != nil {
			b.Fatal(err)
		}
	}
	srv.wait(b.N)
}

type countingHandler struct {
	mu  sync.Mutex
	n   int
	got chan struct{}
}

func (h *countingHandler) Connected(transport.Conn) {}
func (h *countingHandler) Received(transport.Conn, transport.Channel, []byte) {
	h.mu.Lock()
	h.n++
	h.mu.Unlock()
	if h.got != nil {
		select {
		case h.got <- struct{}{}:
		default:
		}
	}
}
func (h *countingHandler) Disconnected(transport.Conn, error) {}

func (h *countingHandler) wait(n int) {
	for {
		h.mu.Lock()
		done := h.n >= n
		h.mu.Unlock()
		if done {
			return
		}
		<-h.got
	}
}
