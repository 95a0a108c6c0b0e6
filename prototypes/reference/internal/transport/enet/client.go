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
	peer          *C.ENetPeer // nil once ENet reset it
	connected     bool
	inBudget      bool // connected, not settled, within the budget: budgetTimeoutMS applies
	peerTimeoutMS int  // the peer timeout in force since the connect event
	stop          bool
	lingerUntil   time.Time // set by a local Close
	deadline      time.Time // end of the connect budget (zero: none)
	// With seed_rtt: the peer's last send before the service pass that may bring the
	// verify-connect (ns_seed_rtt), noted in state() until the connect event.
	connectSent C.enet_uint32
}

// errNoAnswer ends one connect attempt that ENet gave up on (timeout_ms without the
// server's verify-connect).
var errNoAnswer = errors.New("no answer from the server")

// Dial implements transport.Transport. ENet's handshake gets ctx's whole budget:
// each attempt is one ENet connect that gives up after timeout_ms, and while ctx has
// time left a failed attempt is followed by a new one from a fresh host (a new source
// port, so the server never mixes it up with the old attempt). ENet sends the connect
// command at 0, 0.5 and 1.5 s (its initial round-trip estimate is 500 ms and the
// timer doubles) and checks its timeout at the next retransmission, 3.5 s, so with
// timeout_ms = 3000 an attempt is three sends in 3.5 s: under 10 % loss on the way up
// about one attempt in a thousand fails. Without a deadline on ctx there is one
// attempt.
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
	deadline, budgeted := ctx.Deadline()
	for attempt := 1; ; attempt++ {
		c, err := t.dialOnce(ctx, ip, port, hd, deadline)
		noAnswer := errors.Is(err, errNoAnswer)
		switch {
		case err == nil:
			return c, nil
		case noAnswer && budgeted && ctx.Err() == nil && time.Now().Before(deadline):
			continue // the next attempt
		case noAnswer && !budgeted:
			return nil, fail(fmt.Errorf("%w within %d ms", errNoAnswer, t.timeoutMS))
		case noAnswer || attempt > 1 && ctx.Err() != nil:
			end := ctx.Err()
			if end == nil {
				end = context.DeadlineExceeded // ENet gave up right at the deadline
			}
			return nil, fail(fmt.Errorf("%w in %d attempts of up to %d ms: %w", errNoAnswer, attempt, t.timeoutMS, end))
		default:
			return nil, fail(err)
		}
	}
}

// dialOnce is one connect attempt on a fresh host: until ENet's connect event, ENet
// giving up (errNoAnswer) or ctx's end (ctx.Err()). deadline, if not zero, is the
// budget of the whole connect (see client.budgetTimeoutMS).
func (t *Transport) dialOnce(ctx context.Context, ip [4]byte, port uint16, hd transport.Handler, deadline time.Time) (transport.Conn, error) {
	h, err := newHost(false, ip, port, 1, t.sockbuf, t.tuning())
	if err != nil {
		return nil, err
	}
	peer := C.ns_connect(h.h, C.uchar(ip[0]), C.uchar(ip[1]), C.uchar(ip[2]), C.uchar(ip[3]), C.enet_uint16(port))
	if peer == nil {
		h.teardown()
		return nil, errors.New("enet_host_connect failed")
	}
	// The attempt gives up after timeout_ms; Dial makes the next one. The throttle
	// setting waits for the connection: ENet sends it as a command the server would
	// reject now.
	C.enet_peer_timeout(peer, 0, C.enet_uint32(t.timeoutMS), C.enet_uint32(t.timeoutMS))
	c := &conn{h: h, client: true, peer: peer, addr: formatAddr(ip, port)}
	cl := &client{t: t, h: h, c: c, peer: peer, deadline: deadline}
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
		return nil, err
	}
	return c, nil
}

// budgetTimeoutMS is the peer timeout from ENet's connect event until the connection
// has settled (ns_peer_settled) or the connect budget is over: what is left of the
// budget, at least timeout_ms. The first reliable messages (the player's hello) are
// sent before ENet measured a round trip, and the server accepts none of them until
// the acknowledgement of its verify-connect reached it, which ENet retransmits only
// after 0.5, 1.5 and 3.5 s (the fast-connect variant hurries it: ns_hurry_verify); the
// player's hello waited as long, retransmitted on ENet's default 500 ms timer (the
// variant seeds the estimate: ns_seed_rtt). Under timeout_ms = 3000 a
// player could lose its connection before its hello was through. The price: a server
// that vanishes during that phase is noticed at the end of the budget instead of
// after timeout_ms.
func (cl *client) budgetTimeoutMS() int {
	ms := cl.t.timeoutMS
	if !cl.deadline.IsZero() {
		ms = max(ms, int(time.Until(cl.deadline)/time.Millisecond))
	}
	return ms
}

// endBudget applies timeout_ms once the connection has settled or the connect budget
// is over.
func (cl *client) endBudget() {
	if !cl.inBudget || cl.peer == nil {
		return
	}
	if C.ns_peer_settled(cl.peer) == 0 && time.Now().Before(cl.deadline) {
		return
	}
	cl.inBudget = false
	cl.peerTimeoutMS = cl.t.timeoutMS
	C.enet_peer_timeout(cl.peer, 0, C.enet_uint32(cl.t.timeoutMS), C.enet_uint32(cl.t.timeoutMS))
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
		if cl.t.seedRTT {
			C.ns_seed_rtt(cl.h.h, cl.peer, cl.connectSent)
		}
		cl.peerTimeoutMS = cl.budgetTimeoutMS()
		cl.inBudget = cl.peerTimeoutMS > cl.t.timeoutMS
		C.ns_peer_setup(cl.peer, C.enet_uint32(cl.peerTimeoutMS), cBool(cl.t.throttle))
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
			cl.h.addCall(callResult, nil, errNoAnswer)
			return
		}
		if !c.gone {
			c.gone = true
			c.closed.Store(true)
			cl.h.addCall(callDisconnected, c, disconnectErr(e.data, cl.peerTimeoutMS))
		}
	}
}

// refreshRTT also ends the connect budget's timeout: the host calls it every
// rttRefresh (it wakes at least every maxWaitMS).
func (cl *client) refreshRTT() {
	cl.c.updateRTT()
	cl.endBudget()
}

func (cl *client) state() (int, bool) {
	if cl.stop {
		return 0, true
	}
	if cl.t.seedRTT && !cl.connected && cl.peer != nil {
		cl.connectSent = cl.peer.lastSendTime // round calls state before each pass
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
