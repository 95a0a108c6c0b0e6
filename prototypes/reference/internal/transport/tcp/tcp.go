// Package tcp is the Telepathy-like transport: one TCP connection per player,
// TCP_NODELAY on, messages framed with a 4-byte length (see package framing), one
// reader goroutine per connection. Both channels are reliable.
package tcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/transport/framing"
)

func init() {
	transport.Register("tcp", func(opts transport.Options) (transport.Transport, error) {
		if err := transport.CheckOptions("tcp", opts); err != nil {
			return nil, err
		}
		return Transport{}, nil
	})
}

// Transport is the tcp transport.
type Transport struct{}

// Name implements transport.Transport.
func (Transport) Name() string { return "tcp" }

// Caps implements transport.Transport.
func (Transport) Caps() transport.Caps {
	return transport.Caps{NativeReliable: true, NativeUnreliable: false,
		MaxReliableBytes: framing.MaxMessageBytes, MaxUnreliableBytes: framing.MaxMessageBytes}
}

// Settings implements transport.Settings: the binding sets nothing on its sockets, so
// TCP_NODELAY is Go's own default (on for every TCP connection), listed because a reader
// comparing with a library that leaves Nagle on needs it.
func (Transport) Settings() map[string]string { return map[string]string{"tcp_nodelay": "true"} }

type conn struct {
	nc     net.Conn
	closed atomic.Bool
}

func (c *conn) Send(ch transport.Channel, msg []byte) error {
	if c.closed.Load() {
		return transport.ErrClosed
	}
	bp, err := framing.Frame(ch, msg)
	if err != nil {
		return err
	}
	defer framing.Release(bp)
	// net.Conn.Write holds the fd's write lock for the whole buffer, so concurrent
	// senders never interleave frames.
	if _, err := c.nc.Write(*bp); err != nil {
		if c.closed.Load() {
			return transport.ErrClosed
		}
		return fmt.Errorf("tcp write: %w", err)
	}
	return nil
}

func (c *conn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.nc.Close()
}

func (c *conn) RemoteAddr() string { return c.nc.RemoteAddr().String() }

// serve reads frames until the connection ends, then reports the disconnect.
func (c *conn) serve(h transport.Handler) {
	fr := framing.NewReader(c.nc)
	var err error
	for {
		var ch transport.Channel
		var msg []byte
		ch, msg, err = fr.Next()
		if err != nil {
			break
		}
		h.Received(c, ch, msg)
	}
	wasClosed := c.closed.Swap(true)
	_ = c.nc.Close()
	if wasClosed || errors.Is(err, net.ErrClosed) {
		err = nil
	} else if errors.Is(err, io.EOF) {
		err = fmt.Errorf("peer closed the connection: %w", err)
	}
	h.Disconnected(c, err)
}

type listener struct {
	ln    net.Listener
	mu    sync.Mutex
	conns map[*conn]struct{}
	done  chan struct{}
}

func (l *listener) Addr() string { return l.ln.Addr().String() }

func (l *listener) Close() error {
	err := l.ln.Close()
	<-l.done
	l.mu.Lock()
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	return err
}

// Listen implements transport.Transport.
func (Transport) Listen(addr string, h transport.Handler) (transport.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tcp listen %s: %w: %w", addr, transport.ErrBind, err)
	}
	l := &listener{ln: ln, conns: map[*conn]struct{}{}, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			c := &conn{nc: nc}
			l.mu.Lock()
			l.conns[c] = struct{}{}
			l.mu.Unlock()
			h.Connected(c)
			go func() {
				c.serve(h)
				l.mu.Lock()
				delete(l.conns, c)
				l.mu.Unlock()
			}()
		}
	}()
	return l, nil
}

// Dial implements transport.Transport.
func (Transport) Dial(ctx context.Context, addr string, h transport.Handler) (transport.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tcp dial %s: %w: %w", addr, transport.ErrConnect, err)
	}
	c := &conn{nc: nc}
	h.Connected(c)
	go c.serve(h)
	return c, nil
}
