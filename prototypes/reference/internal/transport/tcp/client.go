package tcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/transport/framing"
	"netstick/prototypes/reference/internal/transport/pollset"
)

// sendWait bounds the wait for room in a full send buffer, as a blocking write would wait.
const sendWait = 5 * time.Second

// cliConn is a player's connection: its own socket, a raw non-blocking descriptor read by
// the transport's one receive loop (package pollset), which runs every callback. The
// server's side keeps net.Conn and a reader goroutine per connection (tcp.go).
type cliConn struct {
	pollset.Socket
	t     *Transport
	h     transport.Handler
	raddr string
	in    []byte     // received bytes that do not make a whole frame yet
	wmu   sync.Mutex // keeps concurrent senders' frames whole
}

// Dial implements transport.Transport.
func (t *Transport) Dial(ctx context.Context, addr string, h transport.Handler) (transport.Conn, error) {
	fd, raddr, err := dialStream(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("tcp dial %s: %w: %w", addr, transport.ErrConnect, err)
	}
	c := &cliConn{Socket: pollset.NewSocket(fd), t: t, h: h, raddr: raddr}
	h.Connected(c)
	if err := t.set.Add(c); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("tcp dial %s: %w: %w", addr, transport.ErrConnect, err)
	}
	return c, nil
}

// dialStream connects a non-blocking TCP socket with TCP_NODELAY (as Go's own dialer sets
// it), waiting for the handshake until ctx ends.
func dialStream(ctx context.Context, addr string) (int, string, error) {
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return -1, "", err
	}
	family, sa := pollset.Sockaddr(ta.IP, ta.Port, ta.Zone)
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, "", fmt.Errorf("socket: %w", err)
	}
	if err := connect(ctx, fd, sa); err != nil {
		_ = unix.Close(fd)
		return -1, "", err
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	return fd, ta.String(), nil
}

func connect(ctx context.Context, fd int, sa unix.Sockaddr) error {
	err := unix.Connect(fd, sa)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EINPROGRESS) {
		return fmt.Errorf("connect: %w", err)
	}
	for {
		// Steps of at most 100 ms, so a cancelled ctx without a deadline is seen.
		step := 100 * time.Millisecond
		if d, ok := ctx.Deadline(); ok {
			step = min(step, time.Until(d))
		}
		ready, err := pollset.WaitFor(fd, unix.POLLOUT, step)
		if err != nil {
			return err
		}
		if ready {
			soErr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
			if err != nil {
				return fmt.Errorf("connect: %w", err)
			}
			if soErr != 0 {
				return fmt.Errorf("connect: %w", unix.Errno(soErr))
			}
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("connect: %w", err)
		}
	}
}

func (c *cliConn) Send(ch transport.Channel, msg []byte) error {
	if c.Closed() {
		return transport.ErrClosed
	}
	bp, err := framing.Frame(ch, msg)
	if err != nil {
		return err
	}
	defer framing.Release(bp)
	c.wmu.Lock()
	err = c.Write(*bp, sendWait)
	c.wmu.Unlock()
	if errors.Is(err, pollset.ErrClosed) {
		return transport.ErrClosed
	}
	if err != nil {
		return fmt.Errorf("tcp write: %w", err)
	}
	return nil
}

func (c *cliConn) Close() error {
	c.end(nil)
	return nil
}

func (c *cliConn) RemoteAddr() string { return c.raddr }

// end records the reason (first caller wins), closes the socket and has the receive loop
// report Disconnected once.
func (c *cliConn) end(reason error) { c.End(c.t.set, c, reason, nil) }

// Fail implements pollset.Member.
func (c *cliConn) Fail(err error) { c.end(fmt.Errorf("tcp %s: %w", c.raddr, err)) }

// Ended implements pollset.Member: the one Disconnected, on the receive loop.
func (c *cliConn) Ended() { c.h.Disconnected(c, c.Reason()) }

// ReadReady implements pollset.Member: one read of what is queued, its whole frames
// delivered, the rest kept for the next read.
func (c *cliConn) ReadReady(buf []byte) {
	n, err := c.Read(buf)
	switch {
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) || errors.Is(err, pollset.ErrClosed):
		return
	case err != nil:
		c.end(fmt.Errorf("tcp read from %s: %w", c.raddr, err))
		return
	case n == 0:
		c.end(fmt.Errorf("peer closed the connection: %w", io.EOF))
		return
	}
	data := buf[:n]
	if len(c.in) > 0 { // a frame cut by the last read: join it (rare for small messages)
		c.in = append(c.in, data...)
		data = c.in
	}
	for len(data) > 0 && !c.Closed() {
		ch, msg, used, err := framing.Split(data)
		if err != nil {
			c.end(fmt.Errorf("tcp read from %s: %w", c.raddr, err))
			return
		}
		if used == 0 {
			break
		}
		c.h.Received(c, ch, msg)
		data = data[used:]
	}
	c.in = append(c.in[:0], data...) // copy: data may alias buf or c.in itself
}
