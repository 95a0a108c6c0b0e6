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
	maxWaitMS  = 50                     // sleep cap, a safety net behind the timer computation
	rttRefresh = 100 * time.Millisecond // how often LibRTT values are copied out of ENet
	keepBuf    = 64 << 10               // largest receive copy buffer kept across batches
)

type opKind uint8

const (
	opClose    opKind = iota // local Close of one connection
	opAbort                  // Dial's ctx ended before the connection was up
	opShutdown               // Listener.Close
)

// op is one request from another goroutine to the host goroutine.
type op struct {
	c    *conn
	kind opKind
}

type callKind uint8

const (
	callConnected callKind = iota
	callReceived
	callDisconnected
	callResult // Dial's outcome (err) to the client's result channel
)

// call is one handler callback, collected under the host lock and made after it is
// released, so that handlers may Send (which takes the lock) or Close.
type call struct {
	kind callKind
	ch   transport.Channel
	c    *conn
	msg  []byte // in host.arena, valid until the next batch
	err  error
}

// driver is the server- or client-specific half of a host goroutine. All its methods
// run on the host goroutine with host.mu held; they report to the handler only through
// host.calls.
type driver interface {
	apply(o *op)
	event(e *C.ns_event)
	refreshRTT()
	// state returns how long the host may sleep at most (ms) and whether to stop.
	state() (maxWait int, stop bool)
	// finish runs after the loop, before the host is destroyed.
	finish()
}

// host is one ENetHost with the goroutine that services it.
type host struct {
	evs    *C.ns_event // C array of maxEvents, so ENet's packets never sit in Go memory
	direct bool        // one peer (a dialled connection): Send flushes at once
	tuning C.int       // NS_TUNE_* bits of the variant's tunings (0: stock ENet)
	gid    atomic.Uint64
	done   chan struct{}
	hd     transport.Handler
	result chan error // a client's Dial outcome, sent once

	// sock is an epoll descriptor watching ENet's socket (ns_epoll_socket), registered
	// with Go's netpoller. The host goroutine sleeps in rc.Read until a datagram
	// arrives or sock's read deadline passes: the deadline is ENet's next timer, and
	// other goroutines wake the host goroutine by moving it into the past.
	sock *os.File
	rc   syscall.RawConn

	// Host goroutine only.
	calls []call
	arena []byte // copies of the received messages of one batch

	// mu serialises every libenet call on h and guards the fields below and the
	// connection state the drivers keep (conn.peer, conn.gone, driver fields).
	mu        sync.Mutex
	h         *C.ENetHost
	nPrev     C.int // events of the last batch, whose packets are still alive
	q, spare  []op
	awake     bool      // the host goroutine is running or already woken
	needFlush bool      // server: a message was queued since the last pass or flush
	deadline  time.Time // when the host goroutine must service ENet's timers
	armed     time.Time // sock's read deadline
	dead      bool
}

// past is a read deadline that has passed: it wakes the host goroutine.
var past = time.Unix(1, 0)

func newHost(bind bool, ip [4]byte, port uint16, peers, sockbuf int, tuning C.int) (*host, error) {
	b := C.int(0)
	if bind {
		b = 1
	}
	eh, errno := C.ns_host_create(b, C.uchar(ip[0]), C.uchar(ip[1]), C.uchar(ip[2]), C.uchar(ip[3]),
		C.enet_uint16(port), C.size_t(peers), C.int(sockbuf), tuning)
	if eh == nil {
		if errno == nil {
			errno = errors.New("unknown error")
		}
		return nil, fmt.Errorf("enet_host_create: %w", errno)
	}
	// Go's netpoller waits on an epoll descriptor that watches the socket for input
	// (see ns_epoll_socket); closing it leaves ENet's descriptor alone.
	fd, errno := C.ns_epoll_socket(eh)
	if fd < 0 {
		C.enet_host_destroy(eh)
		return nil, fmt.Errorf("epoll for enet socket: %w", errno)
	}
	sock := os.NewFile(uintptr(fd), "enet-epoll")
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
	h := &host{h: eh, evs: evs, direct: !bind, tuning: tuning, done: make(chan struct{}),
		sock: sock, rc: rc, awake: true, deadline: time.Now()}
	return h, nil
}

// addr returns the bound address of the host.
func (h *host) addr() ([4]byte, uint16) {
	var ip [4]byte
	var port C.enet_uint16
	h.mu.Lock()
	C.ns_host_addr(h.h, (*C.uchar)(unsafe.Pointer(&ip[0])), &port)
	h.mu.Unlock()
	return ip, uint16(port)
}

// wakeLocked makes a sleeping host goroutine run a round; mu must be held.
func (h *host) wakeLocked() {
	if !h.awake {
		h.awake = true
		h.armLocked(past)
	}
}

// armLocked sets sock's read deadline; mu must be held. Setting it under mu orders it
// with the host goroutine's own settings, so a wake-up is never overwritten.
func (h *host) armLocked(t time.Time) {
	if !t.Equal(h.armed) {
		_ = h.sock.SetReadDeadline(t)
		h.armed = t
	}
}

// post queues o for the host goroutine and wakes it if it sleeps. It returns false
// once the host is gone.
func (h *host) post(o op) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead {
		return false
	}
	h.q = append(h.q, o)
	h.wakeLocked()
	return true
}

// send hands a message (pkt, or a packet made from data) to ENet for c. A client host
// flushes it at once from the calling goroutine; the server host queues it and flushes
// at the end of the host goroutine's pass, waking it if it sleeps, so that the echoes
// of one batch and the messages of one game tick share a flush (which walks every peer
// slot). The caller must not hold mu.
func (h *host) send(c *conn, ch transport.Channel, pkt *C.ENetPacket, data unsafe.Pointer, n int, flags C.enet_uint32) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead || c.gone || c.peer == nil {
		if pkt != nil {
			C.enet_packet_destroy(pkt)
		}
		return transport.ErrClosed
	}
	var wait C.int
	switch C.ns_send(h.h, c.peer, C.enet_uint8(ch), pkt, data, C.size_t(n), flags, cBool(h.direct), maxWaitMS, &wait) {
	case 0:
	case -2:
		return fmt.Errorf("enet send %d B to %s: enet_packet_create: out of memory", n, c.addr)
	default:
		return nil // ENet refused it (the peer is disconnecting): dropped silently
	}
	if !h.direct {
		h.needFlush = true
		h.wakeLocked()
		return nil
	}
	// The message may have started a retransmission timer earlier than the one the
	// host goroutine sleeps for.
	if dl := time.Now().Add(time.Duration(wait) * time.Millisecond); dl.Before(h.deadline) {
		h.deadline = dl
		if !h.awake {
			h.armLocked(dl)
		}
	}
	return nil
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

// run is the host goroutine. Each round takes the lock, applies queued ops, fetches one
// batch of ENet events (servicing the socket when ENet has none queued) and turns them
// into handler calls, then makes the calls without the lock. It sleeps when ENet has
// nothing more, until the socket is readable, an op or flush is due, or ENet's next
// timer of any peer (earliest retransmission or ping), at most maxWaitMS.
func (h *host) run(d driver) {
	h.gid.Store(goid())
	defer func() {
		h.teardown()
		close(h.done)
	}()
	lastRTT := time.Now()
	stopped := false
	// service runs rounds until ENet has nothing more, then returns false to sleep in
	// the netpoller. It is called again when the socket becomes readable: the netpoller
	// is edge-triggered, and each round's service pass reads the socket until it is
	// empty, so every datagram that arrives after that read wakes the host goroutine.
	service := func(uintptr) bool {
		for {
			more, stop := h.round(d, &lastRTT)
			h.runCalls()
			if stop {
				stopped = true
				return true
			}
			if !more && h.sleepReady(d) {
				return false
			}
		}
	}
	for !stopped {
		err := h.rc.Read(service)
		if stopped {
			break
		}
		// The deadline passed: ENet's timer, or a wake-up. Read fails at once while it
		// stays in the past, so clear it; the next round arms the next one.
		h.mu.Lock()
		h.awake = true
		h.armLocked(time.Time{})
		h.mu.Unlock()
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			// The netpoller cannot wait for this socket (not expected): poll it.
			time.Sleep(time.Millisecond)
			service(0)
		}
	}
	h.mu.Lock()
	d.finish()
	h.mu.Unlock()
}

// round is one locked step of run; more says ENet had more events than one batch.
func (h *host) round(d driver, lastRTT *time.Time) (more, stop bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.awake = true
	q := h.q
	h.q = h.spare[:0]
	for i := range q {
		d.apply(&q[i])
		q[i] = op{}
	}
	h.spare = q[:0]
	maxWait, stop := d.state()
	if stop {
		return false, true
	}
	var cMore, cPass, cFlush, wait C.int
	n := C.ns_events(h.h, h.tuning, h.evs, maxEvents, h.nPrev, C.int(min(maxWait, maxWaitMS)), &cMore, &cPass, &cFlush, &wait)
	h.nPrev = n
	now := time.Now()
	if cFlush != 0 {
		h.needFlush = true
	} else if cPass != 0 {
		h.needFlush = false // the pass sent what was queued
	}
	// wait covers every peer as of now, including messages sent since the last round.
	h.deadline = now.Add(time.Duration(wait) * time.Millisecond)
	h.arena = h.arena[:0]
	for i := range int(n) {
		d.event(&unsafe.Slice(h.evs, maxEvents)[i])
	}
	if now.Sub(*lastRTT) >= rttRefresh {
		d.refreshRTT()
		*lastRTT = now
	}
	_, stop = d.state()
	return cMore != 0, stop
}

// runCalls makes the handler calls of the last round, without the lock.
func (h *host) runCalls() {
	for i := range h.calls {
		cl := &h.calls[i]
		switch cl.kind {
		case callConnected:
			h.hd.Connected(cl.c)
		case callReceived:
			h.hd.Received(cl.c, cl.ch, cl.msg)
		case callDisconnected:
			h.hd.Disconnected(cl.c, cl.err)
		case callResult:
			h.result <- cl.err
		}
		*cl = call{}
	}
	h.calls = h.calls[:0]
}

// sleepReady flushes what the handlers (or other goroutines, on the server) queued and
// arms the timer. It returns false if an op arrived meanwhile: then no sleep.
func (h *host) sleepReady(d driver) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.q) > 0 {
		return false
	}
	if h.needFlush {
		h.needFlush = false
		maxWait, _ := d.state()
		wait := C.ns_flush(h.h, C.int(min(maxWait, maxWaitMS)))
		if dl := time.Now().Add(time.Duration(wait) * time.Millisecond); dl.Before(h.deadline) {
			h.deadline = dl
		}
	}
	h.awake = false
	h.armLocked(h.deadline)
	return true
}

// addCall queues a handler call; host goroutine, mu held.
func (h *host) addCall(kind callKind, c *conn, err error) {
	h.calls = append(h.calls, call{kind: kind, c: c, err: err})
}

// message copies a received packet into the arena: Go memory valid until the next
// batch, i.e. for the handler call.
func (h *host) message(p *C.ENetPacket) []byte {
	n := int(p.dataLength)
	if n == 0 {
		return []byte{}
	}
	src := unsafe.Slice((*byte)(unsafe.Pointer(p.data)), n)
	if n > keepBuf {
		return bytes.Clone(src) // rare large message: not kept, so the host stays small
	}
	if len(h.arena)+n > cap(h.arena) {
		// Grown on demand (most hosts only ever see small messages); the old arena
		// stays alive through the calls that point into it.
		h.arena = make([]byte, 0, min(max(2*cap(h.arena), n, 4<<10), keepBuf))
	}
	start := len(h.arena)
	h.arena = append(h.arena, src...)
	return h.arena[start:len(h.arena):len(h.arena)]
}

// peerAt returns the ENetPeer of event index idx, or nil if idx is out of range.
func (h *host) peerAt(idx C.int) *C.ENetPeer {
	if idx < 0 || C.size_t(idx) >= h.h.peerCount {
		return nil
	}
	return &unsafe.Slice(h.h.peers, int(h.h.peerCount))[idx]
}

// intercepted reports whether ENet calls back into the binding for every datagram it
// reads (a variant's tuning, nstuned.c); stock ENet has no callback.
func (h *host) intercepted() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.h != nil && h.h.intercept != nil
}

// teardown frees everything the host owns; later posts and sends fail.
func (h *host) teardown() {
	h.mu.Lock()
	h.dead = true
	h.q = nil
	C.ns_release(h.evs, h.nPrev)
	h.nPrev = 0
	C.enet_host_destroy(h.h)
	h.h = nil
	h.mu.Unlock()
	// ENet's own descriptor closed with the host.
	_ = h.sock.Close()
	C.free(unsafe.Pointer(h.evs))
	h.evs = nil
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
