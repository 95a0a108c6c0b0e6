package ws

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"netstick/prototypes/reference/internal/transport"
)

// rawConnKey carries the accepted TCP connection into the request's context, so the
// handler keeps it after the upgrade hijacks it.
type rawConnKey struct{}

type listener struct {
	ln        net.Listener
	srv       *http.Server
	serveDone chan struct{}

	mu       sync.Mutex
	closing  bool
	conns    map[*conn]struct{}
	handlers sync.WaitGroup // upgrade handlers, which serve their connection
	once     sync.Once
}

func (l *listener) Addr() string { return l.ln.Addr().String() }

// Close shuts the HTTP server down, closes every WebSocket with status 1001 (going
// away) and returns once their Disconnected calls have returned (so it must not be
// called from a Handler callback).
func (l *listener) Close() error {
	var err error
	l.once.Do(func() {
		l.mu.Lock()
		l.closing = true
		l.mu.Unlock()
		// Close (not Shutdown): stops accepting and drops connections still in the
		// HTTP phase at once; upgraded ones are hijacked and closed below.
		err = l.srv.Close()
		<-l.serveDone
		l.mu.Lock()
		conns := make([]*conn, 0, len(l.conns))
		for c := range l.conns {
			conns = append(conns, c)
		}
		l.mu.Unlock()
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Go(func() { c.shutdown(websocket.StatusGoingAway, "server shutting down") })
		}
		wg.Wait()
		l.handlers.Wait()
	})
	return err
}

// Listen implements transport.Transport.
func (t *Transport) Listen(addr string, h transport.Handler) (transport.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ws listen %s: %w: %w", addr, transport.ErrBind, err)
	}
	l := &listener{ln: ln, conns: map[*conn]struct{}{}, serveDone: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc(Path, func(w http.ResponseWriter, r *http.Request) { l.upgrade(t, h, w, r) })
	l.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second, // a client that never completes the upgrade
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, rawConnKey{}, c)
		},
	}
	go func() {
		defer close(l.serveDone)
		_ = l.srv.Serve(ln)
	}()
	return l, nil
}

func (l *listener) upgrade(t *Transport, h transport.Handler, w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		http.Error(w, "server shutting down", http.StatusServiceUnavailable)
		return
	}
	l.handlers.Add(1)
	l.mu.Unlock()
	defer l.handlers.Done()

	raw, ok := r.Context().Value(rawConnKey{}).(net.Conn)
	if !ok {
		http.Error(w, "no connection", http.StatusInternalServerError)
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		// No origin check: Netstick clients are not browsers acting for a third party,
		// and a browser (WebGL) client of the benchmark may come from any origin.
		InsecureSkipVerify: true,
		CompressionMode:    websocket.CompressionDisabled,
	})
	if err != nil {
		return // Accept has answered the request
	}
	c := newConn(ws, raw, h, r.RemoteAddr, t.writeTimeout)
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		c.shutdown(websocket.StatusGoingAway, "server shutting down")
		return
	}
	l.conns[c] = struct{}{}
	l.mu.Unlock()
	h.Connected(c)
	c.serve()
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}
