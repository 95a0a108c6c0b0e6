package kcp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	kcpgo "github.com/xtaci/kcp-go/v5"

	"netstick/prototypes/reference/internal/transport"
)

// closeGrace is how long a socket stays open after its sessions were closed: kcp-go
// hands outgoing packets to a goroutine, so the close message written just before
// Close would be lost if the socket closed at once.
const closeGrace = 50 * time.Millisecond

// past is a write/read deadline that has expired: kcp-go then still writes when the
// window has room but returns a timeout instead of blocking.
var past = time.Unix(1, 0)

// conn is one KCP connection, client or server side. One reader goroutine runs all of
// its callbacks (Connected on the server side, Received, Disconnected).
type conn struct {
	s     *settings
	sess  *kcpgo.UDPSession
	h     transport.Handler
	raddr string
	max   int
	mss   int

	l        *listener     // server side
	uc       *net.UDPConn  // client side: the socket, owned here, closed after closeGrace
	stopKeep chan struct{} // client side: stops the keeper

	// sendMu serialises Writes, so the deadline a keepalive or the close message
	// sets never makes a concurrent Send fail.
	sendMu sync.Mutex

	closed     atomic.Bool
	reasonOnce sync.Once
	reason     error // why the connection ended; nil for a local Close

	established atomic.Bool // hello exchanged
	rttOK       atomic.Bool // kcp-go has at least one RTT sample
	created     time.Time
	sent, heard flag
	lastHeard   time.Time // keeper/sweeper only
}

func newConn(s *settings, sess *kcpgo.UDPSession, h transport.Handler) *conn {
	configure(sess, s)
	return &conn{s: s, sess: sess, h: h, raddr: sess.RemoteAddr().String(),
		max: s.maxMessage(), mss: s.mss(), created: time.Now(), lastHeard: time.Now()}
}

// configure applies the turbo settings; the server calls it on every accepted session.
func configure(sess *kcpgo.UDPSession, s *settings) {
	sess.SetStreamMode(false)
	sess.SetWriteDelay(false)
	sess.SetNoDelay(s.nodelay, s.interval, s.resend, s.nc)
	sess.SetWindowSize(s.sndwnd, s.rcvwnd)
	sess.SetMtu(s.mtu) // cannot fail: mtu >= 64 exceeds the 24-byte KCP header
}

func (c *conn) Send(ch transport.Channel, msg []byte) error {
	if ch != transport.Reliable && ch != transport.Unreliable {
		return fmt.Errorf("kcp send: unknown channel %v", ch)
	}
	if len(msg) > c.max {
		return fmt.Errorf("kcp send %d B (max %d): %w", len(msg), c.max, transport.ErrTooLarge)
	}
	if c.closed.Load() {
		return transport.ErrClosed
	}
	bp := frame(ch, msg, c.mss)
	err := c.write(*bp)
	release(bp)
	if err != nil {
		return err
	}
	c.sent.set()
	return nil
}

// write writes one framed message; a failure other than a local close ends the
// connection (a socket error kcp-go reports on the write path is not seen by Read).
func (c *conn) write(b []byte) error {
	c.sendMu.Lock()
	_, err := c.sess.Write(b)
	c.sendMu.Unlock()
	if err == nil {
		return nil
	}
	if c.closed.Load() {
		return transport.ErrClosed
	}
	err = fmt.Errorf("kcp send to %s: %w", c.raddr, err)
	c.end(err, false)
	return err
}

func (c *conn) Close() error {
	c.end(nil, true)
	return nil
}

func (c *conn) RemoteAddr() string { return c.raddr }

// LibRTT implements transport.RTTEstimator: kcp-go's smoothed RTT, whole ms.
func (c *conn) LibRTT() (time.Duration, bool) {
	if !c.rttOK.Load() {
		return 0, false
	}
	return time.Duration(c.sess.GetSRTT()) * time.Millisecond, true
}

// end closes the connection once: it records the reason (first caller wins),
// optionally writes a close message, and closes the session, which ends the reader.
func (c *conn) end(reason error, notifyPeer bool) {
	c.reasonOnce.Do(func() { c.reason = reason })
	if c.closed.Swap(true) {
		return
	}
	if notifyPeer && c.lockSendWithin(closeGrace) {
		// An expired deadline keeps the close message from blocking: it is sent
		// only if the window has room.
		_ = c.sess.SetWriteDeadline(past)
		_, _ = c.sess.Write(closeMsg)
		c.sendMu.Unlock()
	}
	// Closing the session also releases a Send blocked on a full window.
	_ = c.sess.Close()
	if c.stopKeep != nil {
		close(c.stopKeep)
	}
	if c.uc != nil {
		uc := c.uc
		time.AfterFunc(closeGrace, func() { _ = uc.Close() })
	}
	if c.l != nil {
		c.l.forget(c)
	}
}

// lockSendWithin takes sendMu unless a Send holds it for longer than d. A Send blocked
// on a full window (a dead peer) can hold it for ever: kcp-go's Write, like its Read,
// ignores a deadline set after it started blocking, so only Close releases it.
func (c *conn) lockSendWithin(d time.Duration) bool {
	for end := time.Now().Add(d); ; time.Sleep(time.Millisecond) {
		if c.sendMu.TryLock() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// serve delivers messages until the session ends, then reports Disconnected.
func (c *conn) serve(r *reader) {
	var err error
	for {
		var tag byte
		var msg []byte
		tag, msg, err = r.next()
		if err != nil {
			break
		}
		c.heard.set()
		switch tag {
		case tagReliable, tagUnreliable:
			c.h.Received(c, transport.Channel(tag), msg)
		case tagKeepalive, tagHello, tagHelloAck:
			// Keepalives only refresh the timeout; hello and its ack were handled.
		case tagClose:
			c.end(errPeerClosed, false)
		default:
			c.end(fmt.Errorf("kcp from %s: unknown message tag 0x%02x", c.raddr, tag), true)
		}
		if !c.rttOK.Load() {
			// The peer acked our last handshake segment before sending this.
			c.rttOK.Store(true)
		}
	}
	if errors.Is(err, io.ErrClosedPipe) {
		// Closed by us (reason already recorded) or by kcp-go itself, which does so
		// when the same address starts a new conversation.
		err = errors.New("kcp session closed")
	}
	c.end(fmt.Errorf("kcp read from %s: %w", c.raddr, err), false)
	c.h.Disconnected(c, c.reason)
}

// check runs every tick: it expires a silent peer and keeps an idle one alive.
func (c *conn) check(now time.Time) {
	if c.heard.take() {
		c.lastHeard = now
	} else if now.Sub(c.lastHeard) > c.s.timeout {
		// On its own goroutine: end may wait up to closeGrace for a stuck Send, and
		// the server's sweeper must not stall for every dead player.
		go c.end(fmt.Errorf("no message from %s for %v", c.raddr, c.s.timeout), true)
		return
	}
	if !c.sent.take() {
		c.keepalive()
	}
}

// keepalive writes a keepalive without ever blocking the caller (the server sweeps
// all connections from one goroutine): it skips a connection with a Send in progress
// or a full window, which both mean the connection is not idle.
func (c *conn) keepalive() {
	if c.closed.Load() || !c.sendMu.TryLock() {
		return
	}
	_ = c.sess.SetWriteDeadline(past)
	_, err := c.sess.Write(keepaliveMsg)
	_ = c.sess.SetWriteDeadline(time.Time{})
	c.sendMu.Unlock()
	var ne net.Error
	if err != nil && !(errors.As(err, &ne) && ne.Timeout()) && !c.closed.Load() {
		c.end(fmt.Errorf("kcp keepalive to %s: %w", c.raddr, err), false)
	}
}

// flag is a "happened since the last tick" marker; set costs one atomic load when
// already set, so the per-message price is negligible.
type flag struct{ v atomic.Bool }

func (f *flag) set() {
	if !f.v.Load() {
		f.v.Store(true)
	}
}

func (f *flag) take() bool { return f.v.Swap(false) }
