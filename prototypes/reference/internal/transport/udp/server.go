package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"netstick/prototypes/reference/internal/transport"
)

// listener owns the one server socket. A single goroutine reads it and runs the
// Connected and Received callbacks; Disconnected runs on a goroutine of its own so
// that Close may be called from inside a callback.
type listener struct {
	t  *Transport
	uc *net.UDPConn
	h  transport.Handler

	mu     sync.Mutex
	conns  map[netip.AddrPort]*srvConn
	closed bool
	// connecting counts Connected callbacks in progress, so Close can wait until no
	// connection can be reported any more.
	connecting sync.WaitGroup

	stopSweep chan struct{}
	sweepDone chan struct{}
}

// srvConn is one player as seen by the server.
type srvConn struct {
	l       *listener
	addr    netip.AddrPort
	addrStr string
	act     activity
	closed  atomic.Bool

	// hmu serialises this connection's callbacks (the receive goroutine runs
	// Connected/Received, a separate goroutine runs Disconnected).
	hmu sync.Mutex

	lastHeard time.Time // sweeper only
}

// Listen implements transport.Transport.
func (t *Transport) Listen(addr string, h transport.Handler) (transport.Listener, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("udp listen %s: %w: %w", addr, transport.ErrBind, err)
	}
	uc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("udp listen %s: %w: %w", addr, transport.ErrBind, err)
	}
	setBuffers(uc, t.sockbuf)
	l := &listener{t: t, uc: uc, h: h, conns: map[netip.AddrPort]*srvConn{},
		stopSweep: make(chan struct{}), sweepDone: make(chan struct{})}
	go l.receive()
	go l.sweep()
	return l, nil
}

// setBuffers raises the kernel buffers; the kernel silently caps them at
// net.core.rmem_max/wmem_max, and a failure only costs drops under bursts.
func setBuffers(uc *net.UDPConn, size int) {
	if size > 0 {
		_ = uc.SetReadBuffer(size)
		_ = uc.SetWriteBuffer(size)
	}
}

func (l *listener) Addr() string { return l.uc.LocalAddr().String() }

// Close sends every player a disconnect datagram, reports their Disconnected (nil,
// asynchronously, like a local Close) and closes the socket. It waits for Connected
// callbacks in progress, so it must not be called from inside Connected.
func (l *listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	conns := make([]*srvConn, 0, len(l.conns))
	for _, c := range l.conns {
		conns = append(conns, c)
	}
	clear(l.conns)
	l.mu.Unlock()

	l.connecting.Wait()
	for _, c := range conns {
		c.end(nil, true)
	}
	close(l.stopSweep)
	<-l.sweepDone
	// Closing the socket wakes the receive goroutine, which then exits; it is not
	// awaited because Close may run inside one of its Received callbacks.
	return l.uc.Close()
}

// receive is the single reader of the server socket.
func (l *listener) receive() {
	buf := make([]byte, 65536)
	for {
		n, from, err := l.uc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Unconnected UDP sockets report no ICMP errors; anything else (ENOMEM
			// and the like) is transient, so back off briefly rather than spin.
			time.Sleep(time.Millisecond)
			continue
		}
		if n == 0 {
			continue
		}
		l.handle(netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), buf[:n])
	}
}

func (l *listener) lookup(from netip.AddrPort) *srvConn {
	l.mu.Lock()
	c := l.conns[from]
	l.mu.Unlock()
	return c
}

func (l *listener) handle(from netip.AddrPort, d []byte) {
	switch d[0] {
	case tagReliable, tagUnreliable:
		c := l.lookup(from)
		if c == nil {
			// A client we do not know (timed out, or from before a restart): tell it.
			_, _ = l.uc.WriteToUDPAddrPort(disconnectMsg, from)
			return
		}
		c.act.heard.set()
		c.hmu.Lock()
		if !c.closed.Load() {
			l.h.Received(c, transport.Channel(d[0]), d[1:])
		}
		c.hmu.Unlock()
	case tagKeepalive:
		if c := l.lookup(from); c != nil {
			c.act.heard.set()
		} else {
			_, _ = l.uc.WriteToUDPAddrPort(disconnectMsg, from)
		}
	case tagConnect:
		if hasMagic(d) {
			l.connect(from)
		}
	case tagDisconnect:
		if c := l.lookup(from); c != nil {
			c.end(errPeerClosed, false)
		}
	}
}

// connect accepts a new player, or repeats the accept for a retried request.
func (l *listener) connect(from netip.AddrPort) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	if c := l.conns[from]; c != nil {
		l.mu.Unlock()
		c.act.heard.set()
		_, _ = l.uc.WriteToUDPAddrPort(acceptMsg, from)
		return
	}
	c := &srvConn{l: l, addr: from, addrStr: from.String(), lastHeard: time.Now()}
	l.conns[from] = c
	// Hold hmu before the connection becomes visible so no other callback of it
	// can precede Connected.
	c.hmu.Lock()
	l.connecting.Add(1)
	l.mu.Unlock()

	_, _ = l.uc.WriteToUDPAddrPort(acceptMsg, from)
	c.act.sent.set()
	l.h.Connected(c)
	c.hmu.Unlock()
	l.connecting.Done()
}

// sweep sends keepalives on idle connections and expires silent ones.
func (l *listener) sweep() {
	defer close(l.sweepDone)
	tk := time.NewTicker(l.t.tick())
	defer tk.Stop()
	var conns []*srvConn
	for {
		select {
		case <-l.stopSweep:
			return
		case <-tk.C:
		}
		now := time.Now()
		conns = conns[:0]
		l.mu.Lock()
		for _, c := range l.conns {
			conns = append(conns, c)
		}
		l.mu.Unlock()
		for _, c := range conns {
			if c.act.heard.take() {
				c.lastHeard = now
			} else if now.Sub(c.lastHeard) > l.t.timeout {
				c.end(fmt.Errorf("no datagram from %s for %v", c.addrStr, l.t.timeout), true)
				continue
			}
			if !c.act.sent.take() {
				_, _ = l.uc.WriteToUDPAddrPort(keepaliveMsg, c.addr)
			}
		}
		clear(conns) // drop references to closed connections
	}
}

func (c *srvConn) Send(ch transport.Channel, msg []byte) error {
	if c.closed.Load() {
		return transport.ErrClosed
	}
	bp, err := frame(ch, msg)
	if err != nil {
		return err
	}
	// Concurrent writes of whole datagrams on one UDP socket are atomic.
	_, err = c.l.uc.WriteToUDPAddrPort(*bp, c.addr)
	bufPool.Put(bp)
	if err != nil {
		if c.closed.Load() || errors.Is(err, net.ErrClosed) {
			return transport.ErrClosed
		}
		return fmt.Errorf("udp send to %s: %w", c.addrStr, err)
	}
	c.act.sent.set()
	return nil
}

func (c *srvConn) Close() error {
	c.end(nil, true)
	return nil
}

func (c *srvConn) RemoteAddr() string { return c.addrStr }

// end closes the connection once: it forgets the address, optionally tells the peer,
// and reports Disconnected(reason) on a new goroutine (the caller may be inside one
// of this connection's callbacks, which hold hmu).
func (c *srvConn) end(reason error, notifyPeer bool) {
	if c.closed.Swap(true) {
		return
	}
	l := c.l
	l.mu.Lock()
	if l.conns[c.addr] == c {
		delete(l.conns, c.addr)
	}
	l.mu.Unlock()
	if notifyPeer {
		_, _ = l.uc.WriteToUDPAddrPort(disconnectMsg, c.addr)
	}
	go func() {
		c.hmu.Lock()
		defer c.hmu.Unlock()
		l.h.Disconnected(c, reason)
	}()
}
