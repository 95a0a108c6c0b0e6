package udp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/transport/pollset"
)

// cliConn is a player's connection: its own connected socket, read by the transport's
// one receive loop (package pollset), which runs every callback, and one keeper goroutine for
// keepalives and the timeout. The socket is a raw non-blocking descriptor outside Go's
// netpoller, so an arriving datagram wakes the receive loop only.
type cliConn struct {
	pollset.Socket
	t        *Transport
	h        transport.Handler
	raddr    string
	act      activity
	stopKeep chan struct{}
}

// Dial implements transport.Transport.
func (t *Transport) Dial(ctx context.Context, addr string, h transport.Handler) (transport.Conn, error) {
	fd, raddr, err := dialSocket(addr, t.sockbuf)
	if err != nil {
		return nil, fmt.Errorf("udp dial %s: %w: %w", addr, transport.ErrConnect, err)
	}
	buf := make([]byte, 65536)
	first, err := handshake(ctx, fd, buf)
	if err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("udp dial %s: %w: %w", addr, transport.ErrConnect, err)
	}
	c := &cliConn{Socket: pollset.NewSocket(fd), t: t, h: h, raddr: raddr, stopKeep: make(chan struct{})}
	c.act.sent.set()
	c.act.heard.set()
	h.Connected(c)
	if first > 0 {
		c.handle(buf[:first])
	}
	if err := t.rx.Add(c); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("udp dial %s: %w: %w", addr, transport.ErrConnect, err)
	}
	go c.keep()
	return c, nil
}

// dialSocket opens a non-blocking UDP socket connected to addr.
func dialSocket(addr string, sockbuf int) (fd int, raddr string, err error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return -1, "", err
	}
	family, sa := pollset.Sockaddr(ua.IP, ua.Port, ua.Zone)
	fd, err = unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, "", fmt.Errorf("socket: %w", err)
	}
	if sockbuf > 0 { // as net.UDPConn's SetReadBuffer and SetWriteBuffer (the kernel caps them)
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, sockbuf)
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, sockbuf)
	}
	if err := unix.Connect(fd, sa); err != nil {
		_ = unix.Close(fd)
		return -1, "", fmt.Errorf("connect: %w", err)
	}
	return fd, ua.String(), nil
}

// handshake repeats the connect request every dialRetry until an accept arrives.
// It returns the length of a data datagram that overtook the accept (the server only
// sends data to accepted players, so data also proves acceptance), left in buf.
func handshake(ctx context.Context, fd int, buf []byte) (int, error) {
	for {
		if err := pollset.WriteAll(fd, connectMsg, sendWait); err != nil {
			return 0, refusedOr(err)
		}
		deadline := time.Now().Add(dialRetry)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		for {
			ready, err := pollset.WaitFor(fd, unix.POLLIN, time.Until(deadline))
			if err != nil {
				return 0, err
			}
			if !ready {
				break
			}
			n, err := unix.Read(fd, buf)
			if errors.Is(err, unix.EAGAIN) {
				continue
			}
			if err != nil {
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

// sendWait bounds the wait for room in a full send buffer, as a blocking write would wait.
const sendWait = time.Second

func refusedOr(err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%w: %w", errRefused, err)
	}
	return err
}

func (c *cliConn) Send(ch transport.Channel, msg []byte) error {
	if c.Closed() {
		return transport.ErrClosed
	}
	bp, err := frame(ch, msg)
	if err != nil {
		return err
	}
	err = c.write(*bp)
	bufPool.Put(bp)
	if err != nil {
		if errors.Is(err, transport.ErrClosed) {
			return err
		}
		err = fmt.Errorf("udp send to %s: %w", c.raddr, refusedOr(err))
		if errors.Is(err, syscall.ECONNREFUSED) {
			// The write consumed the socket's pending ICMP error, so the receive loop
			// will not see it: end the connection here.
			c.end(err, false)
		}
		return err
	}
	c.act.sent.set()
	return nil
}

// write sends one datagram unless the socket was closed.
func (c *cliConn) write(b []byte) error {
	if err := c.Write(b, sendWait); !errors.Is(err, pollset.ErrClosed) {
		return err
	}
	return transport.ErrClosed
}

func (c *cliConn) Close() error {
	c.end(nil, true)
	return nil
}

func (c *cliConn) RemoteAddr() string { return c.raddr }

// end records the reason (first caller wins), optionally tells the server, closes the
// socket and has the receive loop report Disconnected once.
func (c *cliConn) end(reason error, notifyPeer bool) {
	var goodbye func(fd int)
	if notifyPeer {
		goodbye = func(fd int) { _, _ = unix.Write(fd, disconnectMsg) }
	}
	if c.End(c.t.rx, c, reason, goodbye) {
		close(c.stopKeep)
	}
}

// Fail implements pollset.Member.
func (c *cliConn) Fail(err error) { c.end(fmt.Errorf("udp %s: %w", c.raddr, err), false) }

// Ended implements pollset.Member: the one Disconnected, on the receive loop.
func (c *cliConn) Ended() { c.h.Disconnected(c, c.Reason()) }

// ReadReady implements pollset.Member: one datagram, if one is queued, delivered.
func (c *cliConn) ReadReady(buf []byte) {
	n, err := c.Read(buf)
	switch {
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, pollset.ErrClosed):
	case err != nil:
		c.end(fmt.Errorf("udp read from %s: %w", c.raddr, refusedOr(err)), false)
	case n > 0:
		c.handle(buf[:n])
	}
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
				if err := c.write(keepaliveMsg); err != nil && !c.Closed() {
					c.end(fmt.Errorf("udp keepalive to %s: %w", c.raddr, refusedOr(err)), false)
					return
				}
			}
		}
	}
}
