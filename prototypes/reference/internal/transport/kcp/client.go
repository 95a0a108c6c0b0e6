package kcp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	kcpgo "github.com/xtaci/kcp-go/v5"

	"netstick/prototypes/reference/internal/transport"
)

// handshakePoll bounds each wait of the handshake so a cancelled ctx is noticed.
const handshakePoll = 50 * time.Millisecond

// Dial implements transport.Transport. The session runs on a connected UDP socket,
// so an ICMP port-unreachable ends the handshake at once instead of at ctx's end.
func (t *Transport) Dial(ctx context.Context, addr string, h transport.Handler) (transport.Conn, error) {
	fail := func(err error) error { return fmt.Errorf("kcp dial %s: %w: %w", addr, transport.ErrConnect, err) }
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fail(err)
	}
	uc, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return nil, fail(err)
	}
	if t.s.sockbuf > 0 {
		_ = uc.SetReadBuffer(t.s.sockbuf)
		_ = uc.SetWriteBuffer(t.s.sockbuf)
	}
	// kcp-go's batched I/O sends with an explicit address, which Linux accepts on
	// a connected UDP socket. ownConn=false: the socket outlives the session by
	// closeGrace so the close message gets out.
	sess, err := kcpgo.NewConn4(rand.Uint32(), ua, nil, 0, 0, false, uc)
	if err != nil {
		_ = uc.Close()
		return nil, fail(err)
	}
	c := newConn(&t.s, sess, h)
	c.uc = uc
	c.stopKeep = make(chan struct{})
	r := newReader(sess, c.max)
	if err := c.handshake(ctx, r); err != nil {
		c.end(nil, true)
		return nil, fail(err)
	}
	c.established.Store(true)
	c.rttOK.Store(true) // the hello's ack came before the hello-ack
	c.heard.set()
	c.sent.set()
	h.Connected(c)
	go c.keep()
	go c.serve(r)
	return c, nil
}

// handshake writes the hello and waits for the server's answer. KCP retransmits the
// hello by itself, so there is nothing to repeat here.
func (c *conn) handshake(ctx context.Context, r *reader) error {
	defer c.sess.SetReadDeadline(time.Time{})
	if _, err := c.sess.Write(helloMsg); err != nil {
		return err
	}
	for {
		// kcp-go's Read only notices a deadline set while it blocks if it had one
		// when it started, so wait in slices of handshakePoll and check ctx between.
		deadline := time.Now().Add(handshakePoll)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		_ = c.sess.SetReadDeadline(deadline)
		tag, msg, err := r.next()
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return err
			}
			if cerr := ctx.Err(); cerr != nil {
				return fmt.Errorf("no answer from server: %w", cerr)
			}
			continue
		}
		switch {
		case tag == tagHelloAck && hasMagic(msg):
			return nil
		case tag == tagClose:
			return errors.New("server closed the connection during the handshake")
		}
	}
}

// keep runs the client's keepalive/timeout checks until the connection ends.
func (c *conn) keep() {
	tk := time.NewTicker(c.s.tick())
	defer tk.Stop()
	for {
		select {
		case <-c.stopKeep:
			return
		case now := <-tk.C:
			c.check(now)
		}
	}
}
