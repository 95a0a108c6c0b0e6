package quic

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"netstick/prototypes/reference/internal/transport"
)

type listener struct {
	udp    *net.UDPConn
	tr     *quicgo.Transport
	ql     *quicgo.Listener
	ctx    context.Context // cancelled by Close: ends the accept loop and pending setups
	cancel context.CancelFunc

	setups sync.WaitGroup // accept loop and connection setups
	runs   sync.WaitGroup // conn.run goroutines

	mu      sync.Mutex
	closing bool
	conns   map[*conn]struct{}
	once    sync.Once
}

func (l *listener) Addr() string { return l.udp.LocalAddr().String() }

// Close stops accepting, closes every connection with CONNECTION_CLOSE (code 1, so
// clients learn at once that the server went away) and waits until their
// Disconnected calls have returned (so it must not be called from a Handler callback).
func (l *listener) Close() error {
	l.once.Do(func() {
		l.cancel()
		_ = l.ql.Close()
		l.setups.Wait()
		l.mu.Lock()
		l.closing = true
		conns := make([]*conn, 0, len(l.conns))
		for c := range l.conns {
			conns = append(conns, c)
		}
		l.mu.Unlock()
		// CloseWithError waits for each connection to shut down: do them in parallel.
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Go(func() { c.close(codeShutdown, "server shutting down") })
		}
		wg.Wait()
		l.runs.Wait()
		_ = l.tr.Close()
		_ = l.udp.Close()
	})
	return nil
}

// Listen implements transport.Transport.
func (t *Transport) Listen(addr string, h transport.Handler) (transport.Listener, error) {
	fail := func(err error) error { return fmt.Errorf("quic listen %s: %w: %w", addr, transport.ErrBind, err) }
	laddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fail(err)
	}
	udp, err := openUDP("udp", laddr)
	if err != nil {
		return nil, fail(err)
	}
	tlsConf, err := serverTLS()
	if err != nil {
		_ = udp.Close()
		return nil, fmt.Errorf("quic listen %s: %w", addr, err)
	}
	tr := &quicgo.Transport{Conn: udp}
	ql, err := tr.Listen(tlsConf, t.config(true))
	if err != nil {
		_ = tr.Close()
		_ = udp.Close()
		return nil, fail(err)
	}
	l := &listener{udp: udp, tr: tr, ql: ql, conns: map[*conn]struct{}{}}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.setups.Go(func() { l.acceptLoop(t, h) })
	return l, nil
}

func (l *listener) acceptLoop(t *Transport, h transport.Handler) {
	for {
		qc, err := l.ql.Accept(l.ctx)
		if err != nil {
			return // listener closed
		}
		// The handshake is done; wait for the client's stream in the background so
		// one slow client does not hold up the others.
		l.setups.Go(func() { l.setup(t, qc, h) })
	}
}

// setup accepts the client's stream, checks the preamble and starts the connection.
func (l *listener) setup(t *Transport, qc *quicgo.Conn, h transport.Handler) {
	ctx, cancel := context.WithTimeout(l.ctx, t.idleTimeout)
	defer cancel()
	st, err := qc.AcceptStream(ctx)
	if err == nil {
		_ = st.SetReadDeadline(time.Now().Add(t.idleTimeout))
		var b [1]byte
		if _, err = io.ReadFull(st, b[:]); err == nil && b[0] != preamble {
			err = fmt.Errorf("bad preamble byte %#x", b[0])
		}
		_ = st.SetReadDeadline(time.Time{})
	}
	if err != nil {
		// Never reported as Connected, so no Disconnected either.
		_ = qc.CloseWithError(codeProtocol, "no netstick stream")
		return
	}
	c := newConn(qc, st, h, t.datagrams)
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		_ = qc.CloseWithError(codeShutdown, "server shutting down")
		return
	}
	l.conns[c] = struct{}{}
	l.runs.Add(1)
	l.mu.Unlock()
	h.Connected(c)
	go func() {
		defer l.runs.Done()
		c.run(nil)
		l.mu.Lock()
		delete(l.conns, c)
		l.mu.Unlock()
	}()
}
