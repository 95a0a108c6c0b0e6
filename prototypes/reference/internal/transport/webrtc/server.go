package webrtc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/logging"
	pion "github.com/pion/webrtc/v4"

	"netstick/prototypes/reference/internal/transport"
)

type listener struct {
	t      *Transport
	h      transport.Handler
	api    *pion.API
	tcp    net.Listener
	udp    *net.UDPConn
	mux    ice.UDPMux
	srv    *http.Server
	served chan struct{}

	mu      sync.Mutex
	closing bool
	conns   map[*conn]struct{}
}

// Listen implements transport.Transport: HTTP signalling on TCP addr and one shared
// UDP socket on the same address and port for every peer's ICE/DTLS/SCTP traffic.
func (t *Transport) Listen(addr string, h transport.Handler) (transport.Listener, error) {
	fail := func(err error) error { return fmt.Errorf("webrtc listen %s: %w: %w", addr, transport.ErrBind, err) }
	if _, err := t.certificate(); err != nil {
		return nil, fail(err)
	}
	tcpLn, udpConn, err := bindPair(addr)
	if err != nil {
		return nil, fail(err)
	}
	// The kernel default (~208 KiB) drops under bursts when 200 peers share the socket.
	if err := setSockBuf(udpConn, t.cfg.sockbuf); err != nil {
		_, _ = tcpLn.Close(), udpConn.Close()
		return nil, fail(fmt.Errorf("socket buffers %d B: %w", t.cfg.sockbuf, err))
	}
	ifaceF, ipF, err := t.filters(udpConn.LocalAddr().(*net.UDPAddr).IP)
	if err != nil {
		_, _ = tcpLn.Close(), udpConn.Close()
		return nil, fail(err)
	}
	mux := pion.NewICEUDPMux(muxLogger{t.logs.NewLogger("ice")}, udpConn)
	l := &listener{t: t, h: h, tcp: tcpLn, udp: udpConn, mux: mux,
		api: t.newAPI(ifaceF, ipF, mux), served: make(chan struct{}), conns: map[*conn]struct{}{}}
	hm := http.NewServeMux()
	hm.HandleFunc("/offer", l.handleOffer)
	l.srv = &http.Server{Handler: hm, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(l.served)
		_ = l.srv.Serve(tcpLn)
	}()
	return l, nil
}

// muxLogger demotes the mux's "Failed to write packet: io: read/write on closed
// pipe" to debug: the mux logs it at error level for every datagram still arriving
// for a peer whose connection was just closed, which is normal when hundreds of
// peers are torn down and would flood stderr.
type muxLogger struct{ logging.LeveledLogger }

func (l muxLogger) Errorf(format string, args ...any) {
	if len(args) == 1 {
		if err, ok := args[0].(error); ok && errors.Is(err, io.ErrClosedPipe) {
			l.LeveledLogger.Debugf(format, args...)
			return
		}
	}
	l.LeveledLogger.Errorf(format, args...)
}

// bindPair binds TCP and UDP on the same IPv4 address and port; with port 0 it
// retries until the port the kernel picked for TCP is also free for UDP.
func bindPair(addr string) (net.Listener, *net.UDPConn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, nil, fmt.Errorf("port %q: %w", portStr, err)
	}
	var lastErr error
	for range 20 {
		tl, err := net.Listen("tcp4", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return nil, nil, err
		}
		ta := tl.Addr().(*net.TCPAddr)
		uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: ta.IP, Port: ta.Port})
		if err == nil {
			return tl, uc, nil
		}
		_ = tl.Close()
		lastErr = err
		if port != 0 {
			break
		}
	}
	return nil, nil, lastErr
}

func (l *listener) Addr() string { return l.tcp.Addr().String() }

// Close stops signalling, closes every peer connection (in parallel: each close
// flushes an SCTP ABORT and DTLS close_notify) and then the shared UDP socket.
func (l *listener) Close() error {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return nil
	}
	l.closing = true
	l.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := l.srv.Shutdown(ctx) // waits for in-flight offers
	cancel()
	if err != nil {
		_ = l.srv.Close()
	}
	<-l.served

	l.mu.Lock()
	conns := make([]*conn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() { _ = c.Close() })
	}
	wg.Wait()
	// Let the Disconnected callbacks finish so a server that exits right after
	// Close still logs them, but bounded: a Close called from inside a callback of
	// one of these connections would otherwise wait for itself.
	wctx, wcancel := context.WithTimeout(context.Background(), disconnectWait)
	defer wcancel()
	for _, c := range conns {
		select {
		case <-c.done:
		case <-wctx.Done():
		}
	}
	_ = l.mux.Close() // also closes the UDP socket
	_ = l.udp.Close()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("webrtc close %s: signalling shutdown: %w", l.Addr(), err)
	}
	return nil
}

// handleOffer answers one client's offer with a new PeerConnection.
func (l *listener) handleOffer(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an SDP offer", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxOfferBytes))
	if err != nil {
		http.Error(w, "read offer: "+err.Error(), http.StatusBadRequest)
		return
	}
	c, answer, status, err := l.answer(r.Context(), string(body), r.RemoteAddr)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	w.Header().Set("Content-Type", "application/sdp")
	if _, err := io.WriteString(w, answer); err != nil {
		c.shutdown(fmt.Errorf("webrtc send answer: %w", err))
	}
}

// answer creates the peer connection for an offer and returns the answer SDP.
func (l *listener) answer(ctx context.Context, offer, httpRemote string) (*conn, string, int, error) {
	cert, _ := l.t.certificate() // checked in Listen
	pc, err := l.api.NewPeerConnection(pion.Configuration{Certificates: []pion.Certificate{cert}})
	if err != nil {
		return nil, "", http.StatusInternalServerError, fmt.Errorf("new peer connection: %w", err)
	}
	c := newConn(l.t, pc, l.h, httpRemote)
	c.onBoth = func() { c.start() }
	c.onGone = func() {
		l.mu.Lock()
		delete(l.conns, c)
		l.mu.Unlock()
	}
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		_ = pc.Close()
		return nil, "", http.StatusServiceUnavailable, errors.New("server closing")
	}
	l.conns[c] = struct{}{}
	l.mu.Unlock()

	fail := func(status int, err error) (*conn, string, int, error) {
		c.shutdown(err)
		return nil, "", status, err
	}
	rel, unrel, err := newDataChannels(pc)
	if err != nil {
		return fail(http.StatusInternalServerError, err)
	}
	c.watch(rel, unrel)
	c.mu.Lock()
	if c.state == stateOpening {
		c.timer = time.AfterFunc(openTimeout, func() {
			c.shutdown(fmt.Errorf("webrtc: channels not open %v after the answer", openTimeout))
		})
	}
	c.mu.Unlock()
	if err := pc.SetRemoteDescription(pion.SessionDescription{Type: pion.SDPTypeOffer, SDP: offer}); err != nil {
		return fail(http.StatusBadRequest, fmt.Errorf("set offer: %w", err))
	}
	ans, err := pc.CreateAnswer(nil)
	if err != nil {
		return fail(http.StatusBadRequest, fmt.Errorf("create answer: %w", err))
	}
	gathered := pion.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(ans); err != nil {
		return fail(http.StatusInternalServerError, fmt.Errorf("set answer: %w", err))
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		return fail(http.StatusServiceUnavailable, fmt.Errorf("gather: %w", ctx.Err()))
	}
	return c, pc.LocalDescription().SDP, http.StatusOK, nil
}
