package udp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"netstick/prototypes/reference/internal/transport"
)

// cliConn is a player's connection: its own connected socket, one reader goroutine
// that runs every callback, and one keeper goroutine for keepalives and the timeout.
type cliConn struct {
	t     *Transport
	uc    *net.UDPConn
	h     transport.Handler
	raddr string
	act   activity

	closed     atomic.Bool
	reasonOnce sync.Once
	reason     error // why the connection ended; nil for a local Close
	stopKeep   chan struct{}
}

// Dial implements transport.Transport.
func (t *Transport) Dial(ctx context.Context, addr string, h transport.Handler) (transport.Conn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("udp dial %s: %w: %w", addr, transport.ErrConnect, err)
	}
	uc, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return nil, fmt.Errorf("udp dial %s: %w: %w", addr, transport.ErrConnect, err)
	}
	setBuffers(uc, t.sockbuf)
	buf := make([]byte, 65536)
	first, err := handshake(ctx, uc, buf)
	if err != nil {
		_ = uc.Close()
		return nil, fmt.Errorf("udp dial %s: %w: %w", addr, transport.ErrConnect, err)
	}
	c := &cliConn{t: t, uc: uc, h: h, raddr: ua.String(), stopKeep: make(chan struct{})}
	c.act.sent.set()
	c.act.heard.set()
	h.Connected(c)
	if first > 0 {
		c.handle(buf[:first])
	}
	go c.keep()
	go c.read(buf)
	return c, nil
}

// handshake repeats the connect request every dialRetry until an accept arrives.
// It returns the length of a data datagram that overtook the accept (the server only
// sends data to accepted players, so data also proves acceptance), left in buf.
func handshake(ctx context.Context, uc *net.UDPConn, buf []byte) (int, error) {
	defer uc.SetReadDeadline(time.Time{})
	for {
		if _, err := uc.Write(connectMsg); err != nil {
			return 0, refusedOr(err)
		}
		deadline := time.Now().Add(dialRetry)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		_ = uc.SetReadDeadline(deadline)
		for {
			n, err := uc.Read(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					break
				}
				return 0, refusedOr(err)
			}
			if n == 0 {
				continue
			}
			switch buf[0] {
			case tagAccept:
				return 0, nil
			case tagReliable, tagUnreliable:
				return n, nil
			case tagDisconnect:
				return 0, errors.New("server refused the connection")
			}
		}
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("no accept from server: %w", err)
		}
	}
}

func refusedOr(err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%w: %w", errRefused, err)
	}
	return err
}

func (c *cliConn) Send(ch transport.Channel, msg []byte) error {
	if c.closed.Load() {
		return transport.ErrClosed
	}
	bp, err := frame(ch, msg)
	if err != nil {
		return err
	}
	_, err = c.uc.Write(*bp)
	bufPool.Put(bp)
	if err != nil {
		if c.closed.Load() || errors.Is(err, net.ErrClosed) {
			return transport.ErrClosed
		}
		err = fmt.Errorf("udp send to %s: %w", c.raddr, refusedOr(err))
		if errors.Is(err, syscall.ECONNREFUSED) {
			// The write consumed the socket's pending ICMP error, so the reader
			// will not see it: end the connection here.
			c.end(err, false)
		}
		return err
	}
	c.act.sent.set()
	return nil
}

func (c *cliConn) Close() error {
	c.end(nil, true)
	return nil
}

func (c *cliConn) RemoteAddr() string { return c.raddr }

// end records the reason (first caller wins), optionally tells the server, and closes
// the socket, which makes the reader report Disconnected.
func (c *cliConn) end(reason error, notifyPeer bool) {
	c.reasonOnce.Do(func() { c.reason = reason })
	if c.closed.Swap(true) {
		return
	}
	if notifyPeer {
		_, _ = c.uc.Write(disconnectMsg)
	}
	close(c.stopKeep)
	_ = c.uc.Close()
}

// read delivers datagrams until the socket closes, then reports Disconnected once.
func (c *cliConn) read(buf []byte) {
	for !c.closed.Load() {
		n, err := c.uc.Read(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				c.end(fmt.Errorf("udp read from %s: %w", c.raddr, refusedOr(err)), false)
			}
			break
		}
		if n > 0 {
			c.handle(buf[:n])
		}
	}
	c.end(nil, false) // no-op unless the loop ended without a reason
	c.h.Disconnected(c, c.reason)
}

func (c *cliConn) handle(d []byte) {
	c.act.heard.set()
	switch d[0] {
	case tagReliable, tagUnreliable:
		c.h.Received(c, transport.Channel(d[0]), d[1:])
	case tagDisconnect:
		c.end(errPeerClosed, false)
	}
}

// keep sends a keepalive in every tick without other traffic and ends the connection
// when nothing was heard for the timeout.
func (c *cliConn) keep() {
	tk := time.NewTicker(c.t.tick())
	defer tk.Stop()
	lastHeard := time.Now()
	for {
		select {
		case <-c.stopKeep:
			return
		case now := <-tk.C:
			if c.act.heard.take() {
				lastHeard = now
			} else if now.Sub(lastHeard) > c.t.timeout {
				c.end(fmt.Errorf("no datagram from %s for %v", c.raddr, c.t.timeout), true)
				return
			}
			if !c.act.sent.take() {
				if _, err := c.uc.Write(keepaliveMsg); err != nil && !c.closed.Load() {
					c.end(fmt.Errorf("udp keepalive to %s: %w", c.raddr, refusedOr(err)), false)
					return
				}
			}
		}
	}
}
