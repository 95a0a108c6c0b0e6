// Package quic is the QUIC transport (quic-go): one QUIC connection per player.
//
// Reliable messages travel on one bidirectional stream that the client opens right
// after the handshake; they are framed like tcp's (package framing: 4-byte length +
// channel byte). The client writes one preamble byte on that stream first, because a
// QUIC stream only becomes visible to the server once data arrives on it.
// Unreliable messages travel as QUIC DATAGRAM frames (RFC 9221) by default, or on the
// same stream with unreliable=stream (the "streams" variant).
//
// Options (-param t.key=value):
//
//	unreliable=datagram|stream  how Unreliable messages travel (default datagram)
//	idle_timeout_ms=N           QUIC max idle timeout in ms (default 5000); keep-alives
//	                            are sent every N/3 ms so an idle player stays connected
//
// Connecting: the client's handshake may take all of Dial's budget (ctx's deadline):
// quic-go's default handshake idle timeout of 5 s would otherwise end it earlier, with
// no packet from the server since the first Initial (all of them lost on the way up).
//
// TLS: Listen generates a self-signed ECDSA P-256 certificate in memory; the client
// skips verification. ALPN is "netstick". UDP socket buffers are raised to 4 MiB.
package quic

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/transport/framing"
)

const alpn = "netstick"

// MaxDatagramBytes is the largest Unreliable message in datagram mode. quic-go accepts
// a DATAGRAM frame only if it fits one packet of its current size estimate: packet
// size − 1 (type byte) − 20 (longest connection ID) − 16 (AEAD tag). The packet size
// starts at 1280 B (1243 B of datagram) and only grows with path MTU discovery
// (at most 1452 B, 1415 B of datagram), but quic-go falls back to 1200 B packets when
// the path rejects 1280 B ones. 1200−37 = 1163 B is therefore accepted on every path
// from the first packet on, which keeps the limit one fixed number in Caps.
const MaxDatagramBytes = 1200 - 1 - 20 - 16

// preamble is the first byte the client writes on the stream; it makes the stream
// visible to the server and marks the peer as a Netstick client.
const preamble byte = 'N'

// socketBuffer is SO_RCVBUF/SO_SNDBUF: the server multiplexes every player on one UDP
// socket. The kernel doubles it, which also satisfies quic-go's 7 MiB wish, so quic-go
// logs no buffer-size warning where rmem_max/wmem_max allow 4 MiB.
const socketBuffer = 4 << 20

// Application error codes sent in CONNECTION_CLOSE.
const (
	codeNormal   quicgo.ApplicationErrorCode = 0 // Conn.Close
	codeShutdown quicgo.ApplicationErrorCode = 1 // Listener.Close
	codeProtocol quicgo.ApplicationErrorCode = 2 // corrupt stream or missing preamble
)

func init() {
	transport.Register("quic", func(opts transport.Options) (transport.Transport, error) {
		return New(opts)
	})
}

// Transport is the quic transport.
type Transport struct {
	datagrams   bool // Unreliable as DATAGRAM frames (else on the stream)
	idleTimeout time.Duration
}

// New parses the options documented in the package comment.
func New(opts transport.Options) (*Transport, error) {
	if err := transport.CheckOptions("quic", opts, "unreliable", "idle_timeout_ms"); err != nil {
		return nil, err
	}
	t := &Transport{datagrams: true, idleTimeout: 5 * time.Second}
	if v, ok := opts["unreliable"]; ok {
		switch v {
		case "datagram":
		case "stream":
			t.datagrams = false
		default:
			return nil, fmt.Errorf("quic option unreliable=%q: expected datagram or stream", v)
		}
	}
	if v, ok := opts["idle_timeout_ms"]; ok {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("quic option idle_timeout_ms=%q: expected a positive integer", v)
		}
		t.idleTimeout = time.Duration(ms) * time.Millisecond
	}
	return t, nil
}

// Name implements transport.Transport.
func (t *Transport) Name() string { return "quic" }

// Caps implements transport.Transport.
func (t *Transport) Caps() transport.Caps {
	c := transport.Caps{NativeReliable: true, MaxReliableBytes: framing.MaxMessageBytes,
		MaxUnreliableBytes: framing.MaxMessageBytes}
	if t.datagrams {
		c.NativeUnreliable = true
		c.MaxUnreliableBytes = MaxDatagramBytes
	}
	return c
}

// Settings implements transport.Settings (prototype.yaml, transports quic settings), as
// config sets them.
func (t *Transport) Settings() map[string]string {
	return map[string]string{
		"idle_timeout_ms":          strconv.Itoa(int(t.idleTimeout / time.Millisecond)),
		"keep_alive_period_ms":     strconv.Itoa(int(t.idleTimeout / 3 / time.Millisecond)),
		"enable_datagrams":         "true",
		"max_incoming_streams":     "server 1, client 0",
		"max_incoming_uni_streams": "0",
		"handshake_idle_timeout":   "client: the connect budget left when above 5 s",
		"sockbuf":                  strconv.Itoa(socketBuffer),
	}
}

func (t *Transport) config(server bool) *quicgo.Config {
	c := &quicgo.Config{
		MaxIdleTimeout:  t.idleTimeout,
		KeepAlivePeriod: t.idleTimeout / 3,
		EnableDatagrams: true,
		// One bidirectional stream per connection, opened by the client: refuse
		// anything else so a hostile peer cannot park streams nobody accepts.
		MaxIncomingStreams:    -1,
		MaxIncomingUniStreams: -1,
	}
	if server {
		c.MaxIncomingStreams = 1
	}
	return c
}

// dialConfig lets the handshake last until ctx's deadline, if that is later than
// quic-go's default handshake idle timeout. quic-go also gives up when the handshake
// has not completed within twice that timeout, which then lies beyond the deadline.
func dialConfig(ctx context.Context, c *quicgo.Config) *quicgo.Config {
	if deadline, ok := ctx.Deadline(); ok {
		if left := time.Until(deadline); left > defaultHandshakeIdleTimeout {
			c.HandshakeIdleTimeout = left
		}
	}
	return c
}

// defaultHandshakeIdleTimeout is quic-go's default Config.HandshakeIdleTimeout.
const defaultHandshakeIdleTimeout = 5 * time.Second

// openUDP creates the socket quic-go runs on, with large kernel buffers.
func openUDP(network string, laddr *net.UDPAddr) (*net.UDPConn, error) {
	u, err := net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	// Errors are ignored: the kernel clamps to rmem_max/wmem_max, which is still the
	// best this host allows.
	_ = u.SetReadBuffer(socketBuffer)
	_ = u.SetWriteBuffer(socketBuffer)
	return u, nil
}

type conn struct {
	qc        *quicgo.Conn
	st        *quicgo.Stream
	h         transport.Handler
	datagrams bool
	remote    string

	wmu    sync.Mutex // quic-go forbids concurrent Stream.Write
	hmu    sync.Mutex // the handler is never called concurrently for one connection
	closed atomic.Bool
}

func newConn(qc *quicgo.Conn, st *quicgo.Stream, h transport.Handler, datagrams bool) *conn {
	return &conn{qc: qc, st: st, h: h, datagrams: datagrams, remote: qc.RemoteAddr().String()}
}

func (c *conn) Send(ch transport.Channel, msg []byte) error {
	if c.closed.Load() {
		return transport.ErrClosed
	}
	switch ch {
	case transport.Unreliable:
		if c.datagrams {
			if len(msg) > MaxDatagramBytes {
				return fmt.Errorf("quic datagram of %d B (limit %d B): %w", len(msg), MaxDatagramBytes, transport.ErrTooLarge)
			}
			// SendDatagram copies msg.
			if err := c.qc.SendDatagram(msg); err != nil {
				return c.sendErr("datagram", len(msg), err)
			}
			return nil
		}
	case transport.Reliable:
	default:
		return fmt.Errorf("quic send: invalid channel %v", ch)
	}
	bp, err := framing.Frame(ch, msg)
	if err != nil {
		return fmt.Errorf("quic stream send: %w", err)
	}
	defer framing.Release(bp)
	// Write returns once quic-go has copied or sent everything, so bp can be reused.
	c.wmu.Lock()
	_, err = c.st.Write(*bp)
	c.wmu.Unlock()
	if err != nil {
		return c.sendErr("stream write", len(msg), err)
	}
	return nil
}

func (c *conn) sendErr(op string, n int, err error) error {
	var tl *quicgo.DatagramTooLargeError
	if errors.As(err, &tl) {
		return fmt.Errorf("quic %s of %d B (quic-go limit now %d B): %w", op, n, tl.MaxDatagramPayloadSize, transport.ErrTooLarge)
	}
	if c.closed.Load() || c.qc.Context().Err() != nil {
		return fmt.Errorf("quic %s to %s: %w: %w", op, c.remote, transport.ErrClosed, err)
	}
	return fmt.Errorf("quic %s to %s: %w", op, c.remote, err)
}

// Close closes the connection and tells the peer (CONNECTION_CLOSE, code 0).
func (c *conn) Close() error {
	c.close(codeNormal, "")
	return nil
}

// close marks the close as local (Disconnected gets nil) and sends CONNECTION_CLOSE;
// quic-go's CloseWithError returns once the connection has shut down.
func (c *conn) close(code quicgo.ApplicationErrorCode, reason string) {
	if c.closed.Swap(true) {
		return
	}
	_ = c.qc.CloseWithError(code, reason)
}

func (c *conn) RemoteAddr() string { return c.remote }

// LibRTT implements transport.RTTEstimator with quic-go's smoothed RTT (RFC 9002).
func (c *conn) LibRTT() (time.Duration, bool) {
	rtt := c.qc.ConnectionStats().SmoothedRTT
	return rtt, rtt > 0
}

// run delivers messages until the connection ends, then calls cleanup (if any) and
// reports the disconnect. h.Connected must have been called.
func (c *conn) run(cleanup func()) {
	var wg sync.WaitGroup
	wg.Go(c.readDatagrams) // also in stream mode: the peer may be in datagram mode
	err := c.readStream()
	if !c.closed.Load() {
		var ae *quicgo.ApplicationError
		var ie *quicgo.IdleTimeoutError
		switch {
		case errors.As(err, &ae) && ae.Remote:
			err = fmt.Errorf("peer closed the connection: %w", err)
		case errors.As(err, &ie):
			err = fmt.Errorf("peer silent for the idle timeout: %w", err)
		}
	}
	// The stream is over (peer gone, corrupt data or local close): end the connection
	// so the datagram reader stops too. A no-op if it is already closed.
	_ = c.qc.CloseWithError(codeProtocol, "stream ended")
	wg.Wait()
	if cleanup != nil {
		cleanup()
	}
	if c.closed.Load() {
		err = nil
	} else if err != nil {
		err = fmt.Errorf("quic connection %s: %w", c.remote, err)
	}
	c.h.Disconnected(c, err)
}

func (c *conn) readStream() error {
	fr := framing.NewReader(c.st)
	for {
		ch, msg, err := fr.Next()
		if err != nil {
			return err
		}
		c.hmu.Lock()
		c.h.Received(c, ch, msg)
		c.hmu.Unlock()
	}
}

func (c *conn) readDatagrams() {
	for {
		msg, err := c.qc.ReceiveDatagram(context.Background())
		if err != nil {
			return // only when the connection is closed
		}
		c.hmu.Lock()
		c.h.Received(c, transport.Unreliable, msg)
		c.hmu.Unlock()
	}
}

// Dial implements transport.Transport. Each player gets its own UDP socket, like a
// real client process would.
func (t *Transport) Dial(ctx context.Context, addr string, h transport.Handler) (transport.Conn, error) {
	fail := func(err error) error { return fmt.Errorf("quic dial %s: %w: %w", addr, transport.ErrConnect, err) }
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fail(err)
	}
	network := "udp6"
	if raddr.IP == nil || raddr.IP.To4() != nil {
		network = "udp4"
	}
	udp, err := openUDP(network, nil)
	if err != nil {
		return nil, fail(err)
	}
	tr := &quicgo.Transport{Conn: udp}
	cleanup := func() {
		_ = tr.Close()
		_ = udp.Close()
	}
	tlsConf := clientTLS()
	qc, err := tr.Dial(ctx, raddr, tlsConf, dialConfig(ctx, t.config(false)))
	if err != nil {
		cleanup()
		return nil, fail(err)
	}
	st, err := qc.OpenStreamSync(ctx)
	if err == nil {
		_, err = st.Write([]byte{preamble})
	}
	if err != nil {
		_ = qc.CloseWithError(codeProtocol, "stream setup failed")
		cleanup()
		return nil, fail(err)
	}
	c := newConn(qc, st, h, t.datagrams)
	h.Connected(c)
	go c.run(cleanup)
	return c, nil
}
