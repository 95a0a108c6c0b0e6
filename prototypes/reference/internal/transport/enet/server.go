//go:build linux && cgo

package enet

/*
#include "nsenet.h"
*/
import "C"

import (
	"context"
	"fmt"
	"time"

	"netstick/prototypes/reference/internal/transport"
)

// listener is the server: one ENet host for every player, driven by one goroutine.
type listener struct {
	t    *Transport
	h    *host
	addr string

	// Guarded by h.mu (used on the host goroutine).
	conns       []*conn // by peer index
	shutdown    bool
	lingerUntil time.Time
}

// Listen implements transport.Transport.
func (t *Transport) Listen(addr string, hd transport.Handler) (transport.Listener, error) {
	fail := func(err error) error { return fmt.Errorf("enet listen %s: %w: %w", addr, transport.ErrBind, err) }
	if err := initialize(); err != nil {
		return nil, fail(err)
	}
	ip, port, err := resolve4(context.Background(), addr)
	if err != nil {
		return nil, fail(err)
	}
	h, err := newHost(true, ip, port, t.maxPeers, t.sockbuf, t.tuning())
	if err != nil {
		return nil, fail(err)
	}
	h.hd = hd
	l := &listener{t: t, h: h, conns: make([]*conn, t.maxPeers)}
	l.addr = formatAddr(h.addr())
	go h.run(l)
	return l, nil
}

func (l *listener) Addr() string { return l.addr }

// Close disconnects every peer, reports each accepted connection Disconnected (nil),
// and returns once the host goroutine has stopped and the host is destroyed. Called
// from a handler callback (the host goroutine) it cannot wait, and returns at once.
func (l *listener) Close() error {
	l.h.post(op{kind: opShutdown})
	if !l.h.inHost() {
		<-l.h.done
	}
	return nil
}

func (l *listener) apply(o *op) {
	switch o.kind {
	case opClose:
		l.closeConn(o.c) // the pass that follows sends the disconnect
	case opShutdown:
		l.startShutdown()
	}
}

// closeConn is a local Close of one connection: queued messages still go out first
// (disconnect_later); ENet's later disconnect event for the slot is then ignored.
func (l *listener) closeConn(c *conn) {
	if c.gone {
		return
	}
	c.gone = true
	C.enet_peer_disconnect_later(c.peer, dataPeerClosed)
	c.peer = nil
	l.h.addCall(callDisconnected, c, nil)
}

func (l *listener) startShutdown() {
	if l.shutdown {
		return
	}
	l.shutdown = true
	for _, c := range l.conns {
		if c == nil || c.gone {
			continue
		}
		c.gone = true
		c.closed.Store(true)
		// Not disconnect_later: a server going away should tell players now.
		C.enet_peer_disconnect(c.peer, dataServerShutdown)
		c.peer = nil
		l.h.addCall(callDisconnected, c, nil)
	}
	C.enet_host_flush(l.h.h)
	l.lingerUntil = time.Now().Add(l.t.linger)
}

func (l *listener) event(e *C.ns_event) {
	switch e._type {
	case C.ENET_EVENT_TYPE_CONNECT:
		peer := l.h.peerAt(e.peer)
		if peer == nil {
			return
		}
		if l.shutdown {
			C.enet_peer_disconnect_now(peer, dataServerShutdown)
			return
		}
		if old := l.conns[e.peer]; old != nil {
			// ENet reused the slot without a disconnect event we saw; should not happen.
			l.lost(e.peer, 0)
		}
		c := &conn{h: l.h, peer: peer, addr: peerAddr(peer)}
		C.ns_peer_setup(peer, C.enet_uint32(l.t.timeoutMS), cBool(l.t.throttle))
		c.updateRTT()
		l.conns[e.peer] = c
		l.h.addCall(callConnected, c, nil)
	case C.ENET_EVENT_TYPE_RECEIVE:
		if e.peer < 0 || int(e.peer) >= len(l.conns) {
			return
		}
		c := l.conns[e.peer]
		ch, ok := channelOf(e.channel)
		if c == nil || c.gone || !ok {
			return // the packet is destroyed with the event batch
		}
		c.updateRTT()
		l.h.calls = append(l.h.calls, call{kind: callReceived, c: c, ch: ch, msg: l.h.message(e.packet)})
	case C.ENET_EVENT_TYPE_DISCONNECT:
		if e.peer >= 0 && int(e.peer) < len(l.conns) {
			l.lost(e.peer, e.data)
		}
	}
}

// lost clears slot idx after ENet reset its peer and reports the connection if no one
// has yet.
func (l *listener) lost(idx C.int, data C.enet_uint32) {
	c := l.conns[idx]
	l.conns[idx] = nil
	if c == nil || c.gone {
		return
	}
	c.gone = true
	c.peer = nil
	c.closed.Store(true)
	l.h.addCall(callDisconnected, c, disconnectErr(data, l.t.timeoutMS))
}

func (l *listener) refreshRTT() {
	for _, c := range l.conns {
		if c != nil {
			c.updateRTT()
		}
	}
}

func (l *listener) state() (int, bool) {
	if !l.shutdown {
		return maxWaitMS, false
	}
	left := time.Until(l.lingerUntil)
	if left <= 0 || C.ns_active_peers(l.h.h) == 0 {
		return 0, true
	}
	return int(left/time.Millisecond) + 1, false
}

// finish resets whatever peers did not acknowledge the disconnect in time; each gets
// one unsequenced disconnect command first.
func (l *listener) finish() {
	C.ns_disconnect_all_now(l.h.h, dataServerShutdown)
}

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
