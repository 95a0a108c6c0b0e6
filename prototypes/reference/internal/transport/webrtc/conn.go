package webrtc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/sctp"
	pion "github.com/pion/webrtc/v4"

	"netstick/prototypes/reference/internal/transport"
)

// Connection life cycle: opening -> ready (Connected reported) -> closing.
const (
	stateOpening = iota
	stateReady
	stateClosing
)

// conn is one PeerConnection with its two detached data channels.
type conn struct {
	t  *Transport
	pc *pion.PeerConnection
	h  transport.Handler

	// rel/unrel are set once both channels are open, before state becomes ready.
	rel, unrel     datachannel.ReadWriteCloser
	relMu, unrelMu sync.Mutex // one writer per SCTP stream: SSN order = queue order

	closed atomic.Bool // fast path for Send

	mu       sync.Mutex
	state    int
	opened   int
	reason   error
	remote   string
	onBoth   func()      // called once when both channels are open
	onGone   func()      // called after teardown (listener bookkeeping)
	timer    *time.Timer // server: open timeout
	bothOpen chan struct{}
	failed   chan struct{} // closed when teardown starts
	pcClosed chan struct{} // closed once the PeerConnection is closed
	done     chan struct{} // closed after Disconnected (if any) returned

	hmu sync.Mutex     // serialises Received from the two read loops
	wg  sync.WaitGroup // read loops
}

func newConn(t *Transport, pc *pion.PeerConnection, h transport.Handler, remote string) *conn {
	return &conn{t: t, pc: pc, h: h, remote: remote,
		bothOpen: make(chan struct{}), failed: make(chan struct{}), pcClosed: make(chan struct{}),
		done: make(chan struct{})}
}

// watch hooks the PeerConnection and channel events that drive the life cycle.
func (c *conn) watch(rel, unrel *pion.DataChannel) {
	c.pc.OnConnectionStateChange(func(s pion.PeerConnectionState) {
		switch s {
		case pion.PeerConnectionStateFailed, pion.PeerConnectionStateDisconnected, pion.PeerConnectionStateClosed:
			c.shutdown(fmt.Errorf("webrtc peer connection %s", s))
		}
	})
	for _, dc := range []*pion.DataChannel{rel, unrel} {
		dc.OnOpen(func() { c.channelOpen(dc) })
		dc.OnClose(func() { c.shutdown(fmt.Errorf("webrtc data channel %q closed", dc.Label())) })
	}
}

func (c *conn) channelOpen(dc *pion.DataChannel) {
	rw, err := dc.Detach()
	if err != nil {
		c.shutdown(fmt.Errorf("webrtc detach %q: %w", dc.Label(), err))
		return
	}
	c.mu.Lock()
	if dc.Label() == "reliable" {
		c.rel = rw
	} else {
		c.unrel = rw
	}
	c.opened++
	both := c.opened == 2 && c.state == stateOpening
	c.mu.Unlock()
	if both {
		close(c.bothOpen)
		if c.onBoth != nil {
			c.onBoth()
		}
	}
}

// start reports Connected and starts the read loops; false if teardown already began.
func (c *conn) start() bool {
	remote := c.selectedRemote()
	c.mu.Lock()
	if c.state != stateOpening {
		c.mu.Unlock()
		return false
	}
	c.state = stateReady
	if c.timer != nil {
		c.timer.Stop()
	}
	c.wg.Add(2)
	if remote != "" {
		c.remote = remote
	}
	c.mu.Unlock()
	c.h.Connected(c)
	go c.readLoop(c.rel, transport.Reliable, 16<<10)
	go c.readLoop(c.unrel, transport.Unreliable, 2<<10)
	return true
}

// selectedRemote is the peer's UDP address on the nominated ICE pair.
func (c *conn) selectedRemote() string {
	sctpT := c.pc.SCTP()
	if sctpT == nil || sctpT.Transport() == nil || sctpT.Transport().ICETransport() == nil {
		return ""
	}
	p, err := sctpT.Transport().ICETransport().GetSelectedCandidatePair()
	if err != nil || p == nil || p.Remote == nil {
		return ""
	}
	return net.JoinHostPort(p.Remote.Address, strconv.Itoa(int(p.Remote.Port)))
}

// shutdown starts teardown once; reason nil means a local Close.
func (c *conn) shutdown(reason error) {
	c.mu.Lock()
	if c.state == stateClosing {
		c.mu.Unlock()
		return
	}
	wasReady := c.state == stateReady
	c.state = stateClosing
	c.reason = reason
	c.closed.Store(true)
	if c.timer != nil {
		c.timer.Stop()
	}
	close(c.failed)
	c.mu.Unlock()
	// Own goroutine: shutdown is called from pion callbacks and our read loops, and
	// the final Disconnected must wait for those loops to end.
	go func() {
		// GracefulClose also waits for pion's goroutines of this connection.
		_ = c.pc.GracefulClose()
		close(c.pcClosed)
		if wasReady {
			c.wg.Wait()
			c.h.Disconnected(c, reason)
		}
		if c.onGone != nil {
			c.onGone()
		}
		close(c.done)
	}()
}

// Send implements transport.Conn.
func (c *conn) Send(ch transport.Channel, msg []byte) error {
	if c.closed.Load() {
		return transport.ErrClosed
	}
	if len(msg) > c.t.cfg.maxMsg {
		return fmt.Errorf("webrtc send %d B on %s (max %d): %w", len(msg), ch, c.t.cfg.maxMsg, transport.ErrTooLarge)
	}
	rw, mu, asString := c.rel, &c.relMu, false
	if ch == transport.Unreliable {
		if c.t.cfg.unrelOnReliable {
			// The string PPID tags it so the receiver reports Unreliable.
			asString = true
		} else {
			rw, mu = c.unrel, &c.unrelMu
		}
	}
	// pion copies msg into its chunks and queues them; Write never blocks on the
	// network (blocking writes are off), so holding mu is short.
	mu.Lock()
	_, err := rw.WriteDataChannel(msg, asString)
	mu.Unlock()
	switch {
	case err == nil:
		return nil
	case c.closed.Load(), errors.Is(err, sctp.ErrStreamClosed), errors.Is(err, sctp.ErrPayloadDataStateNotExist):
		return fmt.Errorf("webrtc send on %s: %w: %w", ch, transport.ErrClosed, err)
	case errors.Is(err, sctp.ErrOutboundPacketTooLarge):
		// The peer advertised a smaller a=max-message-size than ours.
		return fmt.Errorf("webrtc send %d B on %s: %w: %w", len(msg), ch, transport.ErrTooLarge, err)
	}
	return fmt.Errorf("webrtc send on %s: %w", ch, err)
}

// Close implements transport.Conn; it returns once the PeerConnection is closed.
func (c *conn) Close() error {
	c.shutdown(nil)
	<-c.pcClosed
	return nil
}

// RemoteAddr implements transport.Conn.
func (c *conn) RemoteAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.remote
}

// LibRTT implements transport.RTTEstimator with the SCTP smoothed RTT.
func (c *conn) LibRTT() (time.Duration, bool) {
	sctpT := c.pc.SCTP()
	if sctpT == nil {
		return 0, false
	}
	srtt := sctpT.Stats().SmoothedRoundTripTime // seconds; 0 until measured
	if srtt <= 0 {
		return 0, false
	}
	return time.Duration(srtt * float64(time.Second)), true
}

// readLoop delivers one channel's messages with one reusable buffer that grows up
// to maxmsg (pion keeps a message queued when the buffer is short).
func (c *conn) readLoop(rw datachannel.ReadWriteCloser, ch transport.Channel, size int) {
	defer c.wg.Done()
	maxMsg := c.t.cfg.maxMsg
	buf := make([]byte, min(size, maxMsg))
	for {
		n, isString, err := rw.ReadDataChannel(buf)
		if err != nil {
			if errors.Is(err, io.ErrShortBuffer) {
				if len(buf) < maxMsg {
					buf = make([]byte, min(2*len(buf), maxMsg))
					continue
				}
				err = fmt.Errorf("message above maxmsg=%d: %w", maxMsg, err)
			}
			c.shutdown(fmt.Errorf("webrtc %s channel: %w", ch, err))
			return
		}
		got := ch
		if isString {
			got = transport.Unreliable // Unreliable carried on the reliable channel
		}
		c.hmu.Lock()
		c.h.Received(c, got, buf[:n])
		c.hmu.Unlock()
	}
}
