//go:build linux && cgo

package enet

/*
#include "nsenet.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"time"

	"netstick/prototypes/reference/internal/transport"
)

var errAborted = errors.New("dial aborted")

// client drives the one-peer host of a dialled connection.
type client struct {
	t *Transport
	h *host
	c *conn

	// Guarded by h.mu (used on the host goroutine).
	peer        *C.ENetPeer // nil once ENet reset it
	connected   bool
	stop        bool
	lingerUntil time.Time // set by a local Close
}

// Dial implements transport.Transport.
func (t *Transport) Dial(ctx context.Context, addr string, hd transport.Handler) (transport.Conn, error) {
	fail := func(err error) error { return fmt.Errorf("enet dial %s: %w: %w", addr, transport.ErrConnect, err) }
	if err := initialize(); err != nil {
		return nil, fail(err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fail(err)
	}
	ip, port, err := resolve4(ctx, addr)
	if err != nil {
		return nil, fail(err)
	}
	h, err := newHost(false, ip, port, 1, t.sockbuf)
	if err != nil {
		return nil, fail(err)
	}
	peer := C.ns_connect(h.h, C.uchar(ip[0]), C.uchar(ip[1]), C.uchar(ip[2]), C.uchar(ip[3]), C.enet_uint16(port))
	if peer == nil {
		h.teardown()
		return nil, fail(errors.New("enet_host_connect failed"))
	}
	// The connect attempt itself gives up after timeout_ms too. The throttle setting
	// waits for the connection: ENet sends it as a command the server would reject now.
	C.enet_peer_timeout(peer, 0, C.enet_uint32(t.timeoutMS), C.enet_uint32(t.timeoutMS))
	c := &conn{h: h, client: true, peer: peer, addr: formatAddr(ip, port)}
	cl := &client{t: t, h: h, c: c, peer: peer}
	h.hd, h.result = hd, make(chan error, 1)
	go h.run(cl)
	select {
	case err = <-h.result:
	case <-ctx.Done():
		h.post(op{kind: opAbort})
		// The host goroutine decides: the connection may have come up meanwhile.
		if err = <-h.result; errors.Is(err, errAborted) {
			err = ctx.Err()
		}
	}
	if err != nil {
		<-h.done
		return nil, fail(err)
	}
	return c, nil
}

func (cl *client) apply(o *op) {
	switch o.kind {
	case opClose:
		cl.closeLocal() // the pass that follows sends the disconnect
	case opAbort:
		if !cl.connected && !cl.stop {
			C.enet_peer_reset(cl.peer)
			cl.peer, cl.c.peer = nil, nil
			cl.stop = true
			cl.h.addCall(callResult, nil, errAborted)
		}
	}
}

// closeLocal starts a graceful disconnect: queued messages first, then ENet's
// disconnect, whose acknowledgement ends the host loop (or linger_ms does).
func (cl *client) closeLocal() {
	c := cl.c
	if c.gone || cl.peer == nil {
		return
	}
	c.gone = true
	c.peer = nil
	C.enet_peer_disconnect_later(cl.peer, dataPeerClosed)
	cl.lingerUntil = time.Now().Add(cl.t.linger)
	cl.h.addCall(callDisconnected, c, nil)
}

func (cl *client) event(e *C.ns_event) {
	c := cl.c
	switch e._type {
	case C.ENET_EVENT_TYPE_CONNECT:
		if cl.stop || cl.connected {
			return
		}
		cl.connected = true
		C.ns_peer_setup(cl.peer, C.enet_uint32(cl.t.timeoutMS), cBool(cl.t.throttle))
		c.updateRTT()
		cl.h.addCall(callConnected, c, nil)
		cl.h.addCall(callResult, nil, nil) // after Connected: Dial returns after it
	case C.ENET_EVENT_TYPE_RECEIVE:
		ch, ok := channelOf(e.channel)
		if !cl.connected || c.gone || !ok {
			return
		}
		c.updateRTT()
		cl.h.calls = append(cl.h.calls, call{kind: callReceived, c: c, ch: ch, msg: cl.h.message(e.packet)})
	case C.ENET_EVENT_TYPE_DISCONNECT:
		// ENet has reset the peer; nothing is left to linger for.
		cl.peer, c.peer = nil, nil
		if cl.stop {
			return
		}
		cl.stop = true
		if !cl.connected {
			cl.h.addCall(callResult, nil, fmt.Errorf("no answer from the server within %d ms", cl.t.timeoutMS))
			return
		}
		if !c.gone {
			c.gone = true
			c.closed.Store(true)
			cl.h.addCall(callDisconnected, c, disconnectErr(e.data, cl.t.timeoutMS))
		}
	}
}

func (cl *client) refreshRTT() { cl.c.updateRTT() }

func (cl *client) state() (int, bool) {
	if cl.stop {
		return 0, true
	}
	if cl.c.gone {
		left := time.Until(cl.lingerUntil)
		if left <= 0 {
			return 0, true
		}
		return int(left/time.Millisecond) + 1, false
	}
	return maxWaitMS, false
}

// finish resets the peer if the disconnect was not acknowledged within linger_ms,
// after one unsequenced disconnect command.
func (cl *client) finish() {
	if cl.peer != nil && cl.peer.state != C.ENET_PEER_STATE_DISCONNECTED {
		C.enet_peer_disconnect_now(cl.peer, dataPeerClosed)
	}
}
