//go:build linux && cgo

package enet

/*
#include "nsenet.h"
*/
import "C"

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"netstick/prototypes/reference/internal/transport"
)

// conn is one ENet peer seen as a transport.Conn.
type conn struct {
	h      *host
	client bool // owns h (one host per dialled connection)
	addr   string
	closed atomic.Bool  // Send fails fast once set
	rtt    atomic.Int64 // ENet's roundTripTime in ns, 0 until known

	// Guarded by h.mu.
	peer *C.ENetPeer // nil once the connection is gone or closed locally
	gone bool        // Disconnected was reported (or is being reported)
}

var _ transport.RTTEstimator = (*conn)(nil)

// Send implements transport.Conn. The message is copied into an ENetPacket here, so
// msg is free when Send returns. A dialled connection sends it at once from the
// calling goroutine; the server's host goroutine sends it at the end of its current
// pass, within microseconds.
func (c *conn) Send(ch transport.Channel, msg []byte) error {
	if c.closed.Load() {
		return transport.ErrClosed
	}
	var flags C.enet_uint32
	limit := maxReliableBytes
	switch ch {
	case transport.Reliable:
		flags = C.ENET_PACKET_FLAG_RELIABLE
	case transport.Unreliable:
		flags = C.ENET_PACKET_FLAG_UNRELIABLE_FRAGMENT
		limit = maxUnreliableBytes
	default:
		return fmt.Errorf("enet send to %s: unknown channel %v", c.addr, ch)
	}
	if len(msg) > limit {
		return fmt.Errorf("enet send %d B on %v to %s (max %d B): %w", len(msg), ch, c.addr, limit, transport.ErrTooLarge)
	}
	var p unsafe.Pointer
	if len(msg) > 0 {
		p = unsafe.Pointer(&msg[0])
	}
	var pkt *C.ENetPacket
	if len(msg) > copyOutside {
		// enet_packet_create only mallocs and copies; it touches no host state, so a
		// large message is copied before taking the host lock.
		if pkt = C.enet_packet_create(p, C.size_t(len(msg)), flags); pkt == nil {
			return fmt.Errorf("enet send %d B to %s: enet_packet_create: out of memory", len(msg), c.addr)
		}
	}
	return c.h.send(c, ch, pkt, p, len(msg), flags)
}

// copyOutside is the message size above which Send copies it into an ENetPacket
// before taking the host lock, in a separate cgo call.
const copyOutside = 16 << 10

// Close implements transport.Conn. A dialled connection's Close returns after its host
// goroutine ended (at most linger_ms plus one pass), except when called from a handler
// callback, where waiting would deadlock.
func (c *conn) Close() error {
	if !c.closed.Swap(true) {
		c.h.post(op{c: c, kind: opClose})
	}
	if c.client && !c.h.inHost() {
		<-c.h.done
	}
	return nil
}

// RemoteAddr implements transport.Conn.
func (c *conn) RemoteAddr() string { return c.addr }

// LibRTT implements transport.RTTEstimator: ENet's smoothed round-trip time, with
// millisecond resolution (see the package comment).
func (c *conn) LibRTT() (time.Duration, bool) {
	v := c.rtt.Load()
	return time.Duration(v), v > 0
}

// updateRTT copies ENet's estimate out; h.mu held.
func (c *conn) updateRTT() {
	if c.peer != nil {
		c.rtt.Store(int64(c.peer.roundTripTime) * int64(time.Millisecond))
	}
}

func peerAddr(p *C.ENetPeer) string {
	var ip [4]byte
	var port C.enet_uint16
	C.ns_peer_addr(p, (*C.uchar)(unsafe.Pointer(&ip[0])), &port)
	return formatAddr(ip, uint16(port))
}
