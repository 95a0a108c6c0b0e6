//go:build linux && cgo

package enet

/*
#include <stdlib.h>
#include "nsenet.h"
*/
import "C"

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"netstick/prototypes/reference/internal/transport"
)

const (
	maxEvents  = 64                     // events fetched per cgo call
	maxBatches = 16                     // event batches per pass before queued sends get a turn
	maxWaitMS  = 50                     // sleep cap, a safety net behind the timer computation
	rttRefresh = 100 * time.Millisecond // how often LibRTT values are copied out of ENet
	keepBuf    = 64 << 10               // receive buffer kept across messages
)

type opKind uint8

const (
	opSend     opKind = iota
	opClose           // local Close of one connection
	opAbort           // Dial's ctx ended before the connection was up
	opShutdown        // Listener.Close
)

// op is one request from another goroutine to the host goroutine. pkt is C memory
// owned by the op until the host goroutine hands it to ENet or destroys it.
type op struct {
	c    *conn
	pkt  *C.ENetPacket
	kind opKind
	ch   transport.Channel
}

// driver is the server- or client-specific half of a host goroutine. All its methods
// run on the host goroutine.
type driver interface {
	// apply executes one op; it reports whether ENet has new data to send.
	apply(o *op) bool
	event(e *C.ns_event)
	refreshRTT()
	// state returns how long the host may sleep at most (ms) and whether to stop.
	state() (maxWait int, stop bool)
	// finish runs after the loop, before the host is destroyed.
	finish()
}

// host is one ENetHost and the queue other goroutines feed it through.
type host struct {
	h     *C.ENetHost
	evs   *C.ns_event // C array of maxEvents, so ENet's packets never sit in Go memory
	nPrev C.int       // events of the last batch, whose packets are still alive
	buf   []byte      // receive copy buffer, host goroutine only
	again bool        // events or datagrams were left for the next pass
	gid   atomic.Uint64
	done  chan struct{}

	// sock is a dup of ENet's socket registered with Go's netpoller; watch turns its
	// readiness into a token on ready. wake gets a token when the queue fills.
	sock      *os.File
	ready     chan struct{}
	wake      chan struct{}
	watchDone chan struct{}

	mu          sync.Mutex
	q, spare    []op
	wakePending bool // the host goroutine is awake or already woken
	dead        bool
}

func newHost(bind bool, ip [4]byte, port uint16, peers, sockbuf int) (*host, error) {
	b := C.int(0)
	if bind {
		b = 1
	}
	eh, errno := C.ns_host_create(b, C.uchar(ip[0]), C.uchar(ip[1]), C.uchar(ip[2]), C.uchar(ip[3]),
		C.enet_uint16(port), C.size_t(peers), C.int(sockbuf))
	if eh == nil {
		if errno == nil {
			errno = errors.New("unknown error")
		}
		return nil, fmt.Errorf("enet_host_create: %w", errno)
	}
	// A dup shares the socket's open file (and its O_NONBLOCK), so os.NewFile registers
	// it with the netpoller; closing the dup later leaves ENet's descriptor alone.
	fd, errno := C.ns_dup_socket(eh)
	if fd < 0 {
		C.enet_host_destroy(eh)
		return nil, fmt.Errorf("dup enet socket: %w", errno)
	}
	sock := os.NewFile(uintptr(fd), "enet-socket")
	rc, err := sock.SyscallConn()
	if err != nil {
		_ = sock.Close()
		C.enet_host_destroy(eh)
		return nil, fmt.Errorf("enet socket: %w", err)
	}
	evs := (*C.ns_event)(C.calloc(maxEvents, C.sizeof_ns_event))
	if evs == nil {
		_ = sock.Close()
		C.enet_host_destroy(eh)
		return nil, errors.New("out of memory")
	}
	h := &host{h: eh, evs: evs, buf: make([]byte, keepBuf), done: make(chan struct{}),
		sock: sock, ready: make(chan struct{}, 1), wake: make(chan struct{}, 1), watchDone: make(chan struct{})}
	go h.watch(rc)
	return h, nil
}

// watch waits for the socket to become readable and passes a token to the host
// goroutine each time. The netpoller is edge-triggered: every datagram that arrives
// after ENet's last read wakes it, and ns_events reads until the socket is empty.
func (h *host) watch(rc syscall.RawConn) {
	defer close(h.watchDone)
	armed := false
	// The callback never says "done", so Read returns only when sock is closed.
	_ = rc.Read(func(uintptr) bool {
		if armed {
			select {
			case h.ready <- struct{}{}:
			default:
			}
		}
		armed = true
		return false
	})
}

// addr returns the bound address of the host.
func (h *host) addr() ([4]byte, uint16) {
	var ip [4]byte
	var port C.enet_uint16
	C.ns_host_addr(h.h, (*C.uchar)(unsafe.Pointer(&ip[0])), &port)
	return ip, uint16(port)
}

// post queues o for the host goroutine and wakes it if it sleeps. It returns false
// once the host is gone; the caller then still owns o.pkt.
func (h *host) post(o op) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead {
		return false
	}
	h.q = append(h.q, o)
	if !h.wakePending {
		h.wakePending = true
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// take swaps the queue out. While the host goroutine is awake, senders need not wake
// it (final false keeps wakePending set); the last take before sleeping clears it so
// the next Send wakes the host.
func (h *host) take(final bool) []op {
	h.mu.Lock()
	q := h.q
	h.q = h.spare[:0]
	h.wakePending = !final
	h.mu.Unlock()
	return q
}

func (h *host) applyAll(d driver, q []op) bool {
	sent := false
	for i := range q {
		if d.apply(&q[i]) {
			sent = true
		}
		q[i] = op{}
	}
	h.spare = q[:0]
	return sent
}

// goid returns the current goroutine's id from its stack header. Only Close uses it,
// to tell whether it runs inside a handler callback on the host goroutine.
func goid() uint64 {
	var b [64]byte
	s := b[:runtime.Stack(b[:], false)]
	s = bytes.TrimPrefix(s, []byte("goroutine "))
	if i := bytes.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	id, _ := strconv.ParseUint(string(s), 10, 64)
	return id
}

// inHost reports whether the caller is the host goroutine (i.e. a handler callback),
// where waiting for the host to stop would deadlock.
func (h *host) inHost() bool { return h.gid.Load() == goid() }

// run is the host goroutine: the only one that calls libenet for this host.
func (h *host) run(d driver) {
	h.gid.Store(goid())
	defer func() {
		h.teardown()
		close(h.done)
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	lastRTT := time.Now()
	for {
		h.applyAll(d, h.take(false))
		if _, stop := d.state(); stop {
			break
		}
		h.dispatch(d)
		// Handlers (an echo, say) queue sends while we dispatch: flush them now instead
		// of at the next pass.
		if h.applyAll(d, h.take(true)) {
			C.enet_host_flush(h.h)
		}
		maxWait, stop := d.state()
		if stop {
			break
		}
		if now := time.Now(); now.Sub(lastRTT) >= rttRefresh {
			d.refreshRTT()
			lastRTT = now
		}
		if h.again {
			continue
		}
		wait := C.ns_next_timer(h.h, C.int(min(maxWait, maxWaitMS)))
		timer.Reset(time.Duration(wait) * time.Millisecond)
		select {
		case <-h.ready:
		case <-h.wake:
		case <-timer.C:
		}
	}
	d.finish()
}

// dispatch hands ENet's events to d until the socket is drained, or maxBatches
// batches are done (then again makes the loop come back without sleeping, so queued
// sends are not starved by a flood of datagrams).
func (h *host) dispatch(d driver) {
	evs := unsafe.Slice(h.evs, maxEvents)
	var more C.int
	for range maxBatches {
		n := C.ns_events(h.h, h.evs, maxEvents, h.nPrev, &more)
		h.nPrev = n
		for i := range int(n) {
			d.event(&evs[i])
		}
		if more == 0 {
			h.again = false
			return
		}
	}
	h.again = true
}

// message copies a received packet into Go memory valid until the next message.
func (h *host) message(p *C.ENetPacket) []byte {
	n := int(p.dataLength)
	if n == 0 {
		return h.buf[:0]
	}
	dst := h.buf
	if n > len(dst) {
		dst = make([]byte, n) // rare large message: not kept, so the host stays small
	}
	return dst[:copy(dst, unsafe.Slice((*byte)(unsafe.Pointer(p.data)), n))]
}

// peerAt returns the ENetPeer of event index idx, or nil if idx is out of range.
func (h *host) peerAt(idx C.int) *C.ENetPeer {
	if idx < 0 || C.size_t(idx) >= h.h.peerCount {
		return nil
	}
	return &unsafe.Slice(h.h.peers, int(h.h.peerCount))[idx]
}

// teardown frees everything the host owns; later posts fail.
func (h *host) teardown() {
	h.mu.Lock()
	h.dead = true
	q := h.q
	h.q = nil
	h.mu.Unlock()
	for i := range q {
		if q[i].pkt != nil {
			C.enet_packet_destroy(q[i].pkt)
		}
	}
	C.ns_release(h.evs, h.nPrev)
	h.nPrev = 0
	// Closing the dup wakes watch; ENet's own descriptor closes with the host.
	_ = h.sock.Close()
	<-h.watchDone
	C.enet_host_destroy(h.h)
	h.h = nil
	C.free(unsafe.Pointer(h.evs))
	h.evs = nil
}

// sendOp hands a queued packet to ENet, or destroys it if the connection is gone.
func sendOp(o *op) bool {
	c := o.c
	if !c.gone && c.peer != nil && C.enet_peer_send(c.peer, C.enet_uint8(o.ch), o.pkt) == 0 {
		return true
	}
	C.enet_packet_destroy(o.pkt)
	return false
}

// channelOf maps an ENet channel to the transport channel.
func channelOf(ch C.int) (transport.Channel, bool) {
	switch ch {
	case 0:
		return transport.Reliable, true
	case 1:
		return transport.Unreliable, true
	}
	return 0, false
}

// Disconnect data carried by ENet's disconnect command.
const (
	dataPeerClosed     = 1
	dataServerShutdown = 2
)

func disconnectErr(data C.enet_uint32, timeoutMS int) error {
	switch data {
	case dataPeerClosed:
		return errors.New("enet: peer closed the connection")
	case dataServerShutdown:
		return errors.New("enet: server shut down")
	}
	return fmt.Errorf("enet: peer timed out (no acknowledgement within %d ms) or was reset", timeoutMS)
}
