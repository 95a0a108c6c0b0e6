// Package ws is the WebSocket transport (github.com/coder/websocket): one WebSocket per
// player, binary messages, compression off. Each message is one WebSocket message whose
// first byte is the channel; both channels are reliable (TCP underneath).
//
// The server is an http.Server on the listen address that upgrades requests to Path and
// answers 404 elsewhere.
//
// Options (-param t.key=value):
//
//	write_timeout_ms=N  a Send blocked for N ms (peer not reading, link dead) fails and
//	                    closes the connection (default 5000)
package ws

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"netstick/prototypes/reference/internal/transport"
)

// Path is the URL path the server upgrades.
const Path = "/netstick"

// MaxMessageBytes is the largest message on either channel (as framing's limit for tcp).
const MaxMessageBytes = 16 << 20

// closeGrace bounds the close handshake, so closing a connection to a peer that stopped
// reading does not take coder/websocket's 2×5 s.
const closeGrace = time.Second

func init() {
	transport.Register("ws", func(opts transport.Options) (transport.Transport, error) {
		return New(opts)
	})
}

// Transport is the ws transport.
type Transport struct {
	writeTimeout time.Duration
}

// New parses the options documented in the package comment.
func New(opts transport.Options) (*Transport, error) {
	if err := transport.CheckOptions("ws", opts, "write_timeout_ms"); err != nil {
		return nil, err
	}
	t := &Transport{writeTimeout: 5 * time.Second}
	if v, ok := opts["write_timeout_ms"]; ok {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("ws option write_timeout_ms=%q: expected a positive integer", v)
		}
		t.writeTimeout = time.Duration(ms) * time.Millisecond
	}
	return t, nil
}

// Settings implements transport.Settings (prototype.yaml, transports ws settings).
func (t *Transport) Settings() map[string]string {
	return map[string]string{
		"read_limit_bytes": strconv.Itoa(MaxMessageBytes + 1),
		"write_timeout_ms": strconv.Itoa(int(t.writeTimeout / time.Millisecond)),
		"close_timeout_ms": strconv.Itoa(int(closeGrace / time.Millisecond)),
		"origin_check":     "off",
	}
}

// Name implements transport.Transport.
func (t *Transport) Name() string { return "ws" }

// Caps implements transport.Transport.
func (t *Transport) Caps() transport.Caps {
	return transport.Caps{NativeReliable: true, NativeUnreliable: false,
		MaxReliableBytes: MaxMessageBytes, MaxUnreliableBytes: MaxMessageBytes}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

type conn struct {
	ws           *websocket.Conn
	raw          net.Conn // the TCP connection under ws, to bound the close handshake
	h            transport.Handler
	remote       string
	writeTimeout time.Duration

	closed atomic.Bool // Close was called: Disconnected reports nil
	dead   atomic.Bool // the connection is over, for any reason
	// failure is why this side gave up on the connection (a write timeout), reported
	// by Disconnected in place of the read error it causes.
	failure atomic.Pointer[error]

	wmu        sync.Mutex   // one Send at a time, so writeStart times exactly one write
	writeStart atomic.Int64 // when the running write began (ns since epoch), 0 if none
	wdMu       sync.Mutex   // guards wd and wdArmed
	wd         *time.Timer  // the write watchdog, created on the first Send
	wdArmed    bool
}

func newConn(ws *websocket.Conn, raw net.Conn, h transport.Handler, remote string, wt time.Duration) *conn {
	ws.SetReadLimit(MaxMessageBytes + 1) // + the channel byte
	return &conn{ws: ws, raw: raw, h: h, remote: remote, writeTimeout: wt}
}

func (c *conn) Send(ch transport.Channel, msg []byte) error {
	if c.dead.Load() {
		return transport.ErrClosed
	}
	if ch != transport.Reliable && ch != transport.Unreliable {
		return fmt.Errorf("ws send: invalid channel %v", ch)
	}
	if len(msg) > MaxMessageBytes {
		return fmt.Errorf("ws send of %d B (limit %d B): %w", len(msg), MaxMessageBytes, transport.ErrTooLarge)
	}
	// One buffer with the channel byte in front: Write sends it as one frame, one
	// syscall.
	bp := bufPool.Get().(*[]byte)
	b := append(append((*bp)[:0], byte(ch)), msg...)
	err := c.write(b)
	*bp = b
	if cap(b) <= 64<<10 {
		bufPool.Put(bp)
	}
	return err
}

// write sends one message. The write timeout is enforced by the watchdog, not by a
// context: a context with a deadline costs coder/websocket a timer and an AfterFunc per
// message (11 allocations, ~800 B per 100 B message, measured); this path allocates
// nothing.
func (c *conn) write(b []byte) error {
	c.wmu.Lock()
	if c.dead.Load() {
		c.wmu.Unlock()
		return transport.ErrClosed
	}
	c.writeStart.Store(int64(time.Since(epoch)))
	c.armWatchdog()
	err := c.ws.Write(context.Background(), websocket.MessageBinary, b)
	c.writeStart.Store(0)
	c.wmu.Unlock()
	if err == nil {
		return nil
	}
	if c.dead.Load() || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("ws write to %s: %w: %w", c.remote, transport.ErrClosed, err)
	}
	return fmt.Errorf("ws write to %s: %w", c.remote, err)
}

// epoch is the origin of writeStart (monotonic clock).
var epoch = time.Now()

// armWatchdog starts the watchdog timer unless it is already running. Called after
// writeStart was set, so a watchdog that is just deciding to stop sees that write.
func (c *conn) armWatchdog() {
	c.wdMu.Lock()
	if !c.wdArmed {
		c.wdArmed = true
		if c.wd == nil {
			c.wd = time.AfterFunc(c.writeTimeout, c.watchdog)
		} else {
			c.wd.Reset(c.writeTimeout)
		}
	}
	c.wdMu.Unlock()
}

// watchdog fails the connection if the current write has been blocked for the write
// timeout; otherwise it re-arms for the current write, or stops when none is running.
// While messages flow it fires about once per write timeout.
func (c *conn) watchdog() {
	c.wdMu.Lock()
	defer c.wdMu.Unlock()
	start := c.writeStart.Load()
	if start == 0 || c.dead.Load() {
		c.wdArmed = false
		return
	}
	blocked := time.Since(epoch) - time.Duration(start)
	if blocked < c.writeTimeout {
		c.wd.Reset(c.writeTimeout - blocked)
		return
	}
	c.wdArmed = false
	c.fail(fmt.Errorf("write blocked for more than %v", c.writeTimeout))
}

// fail records why this side gives up on the connection and closes it.
func (c *conn) fail(err error) {
	c.failure.CompareAndSwap(nil, &err)
	c.dead.Store(true)
	// Closing the socket makes the blocked write return.
	_ = c.ws.CloseNow()
}

// Close runs the close handshake (status 1000) and closes the connection.
func (c *conn) Close() error {
	c.shutdown(websocket.StatusNormalClosure, "")
	return nil
}

// shutdown closes the connection locally, so Disconnected reports nil.
func (c *conn) shutdown(code websocket.StatusCode, reason string) {
	if c.closed.Swap(true) {
		return
	}
	c.dead.Store(true)
	// The deadline bounds both the close frame's write and the wait for the peer's.
	_ = c.raw.SetDeadline(time.Now().Add(closeGrace))
	_ = c.ws.Close(code, reason)
	_ = c.raw.Close()
}

func (c *conn) RemoteAddr() string { return c.remote }

// serve reads messages until the connection ends, then reports the disconnect.
func (c *conn) serve() {
	var buf []byte
	var err error
	for {
		var typ websocket.MessageType
		var r io.Reader
		// A context without Done: coder/websocket then arms no timer per message.
		typ, r, err = c.ws.Reader(context.Background())
		if err != nil {
			break
		}
		if buf, err = readAll(r, buf[:0]); err != nil {
			break
		}
		// A text message or one without a valid channel byte cannot come from a
		// Netstick peer: drop it.
		if typ != websocket.MessageBinary || len(buf) == 0 || buf[0] > byte(transport.Unreliable) {
			continue
		}
		c.h.Received(c, transport.Channel(buf[0]), buf[1:])
	}
	c.dead.Store(true)
	_ = c.ws.CloseNow()
	c.wdMu.Lock()
	if c.wd != nil {
		c.wd.Stop()
	}
	c.wdMu.Unlock()
	switch {
	case c.closed.Load():
		err = nil
	case c.failure.Load() != nil:
		err = fmt.Errorf("ws connection %s: %w", c.remote, *c.failure.Load())
	default:
		if s := websocket.CloseStatus(err); s == websocket.StatusNormalClosure || s == websocket.StatusGoingAway {
			err = fmt.Errorf("ws connection %s: peer closed the connection: %w", c.remote, err)
		} else {
			err = fmt.Errorf("ws connection %s: %w", c.remote, err)
		}
	}
	c.h.Disconnected(c, err)
}

// readAll reads one message into buf (reused across messages, so no allocation per
// message once it has grown).
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// Dial implements transport.Transport.
func (t *Transport) Dial(ctx context.Context, addr string, h transport.Handler) (transport.Conn, error) {
	fail := func(err error) error { return fmt.Errorf("ws dial %s: %w: %w", addr, transport.ErrConnect, err) }
	// A client per Dial, to get hold of the TCP connection it makes.
	var raw net.Conn
	var d net.Dialer
	hc := &http.Client{Transport: &http.Transport{
		Proxy: nil, // never route the benchmark through an environment proxy
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			nc, err := d.DialContext(ctx, network, a)
			raw = nc
			return nc, err
		},
	}}
	ws, _, err := websocket.Dial(ctx, "ws://"+addr+Path, &websocket.DialOptions{
		HTTPClient:      hc,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		return nil, fail(err)
	}
	if raw == nil {
		_ = ws.CloseNow()
		return nil, fail(errors.New("no TCP connection captured"))
	}
	c := newConn(ws, raw, h, raw.RemoteAddr().String(), t.writeTimeout)
	h.Connected(c)
	go c.serve()
	return c, nil
}
