package kcp

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	kcpgo "github.com/xtaci/kcp-go/v5"

	"netstick/prototypes/reference/internal/transport"
)

// listener wraps a kcp-go Listener (one UDP socket for every player). Each accepted
// session gets a reader goroutine; one sweeper goroutine runs keepalives, timeouts
// and the handshake deadline for all of them.
type listener struct {
	t  *Transport
	kl *kcpgo.Listener
	h  transport.Handler

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	// connecting counts Connected callbacks in progress, so Close can wait until no
	// connection can be reported any more.
	connecting sync.WaitGroup

	acceptDone chan struct{}
	stopSweep  chan struct{}
	sweepDone  chan struct{}
}

// Listen implements transport.Transport.
func (t *Transport) Listen(addr string, h transport.Handler) (transport.Listener, error) {
	kl, err := kcpgo.ListenWithOptions(addr, nil, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("kcp listen %s: %w: %w", addr, transport.ErrBind, err)
	}
	if t.s.sockbuf > 0 {
		// The kernel caps these at net.core.[rw]mem_max; a failure only costs drops.
		_ = kl.SetReadBuffer(t.s.sockbuf)
		_ = kl.SetWriteBuffer(t.s.sockbuf)
	}
	l := &listener{t: t, kl: kl, h: h, conns: map[*conn]struct{}{},
		acceptDone: make(chan struct{}), stopSweep: make(chan struct{}), sweepDone: make(chan struct{})}
	go l.accept()
	go l.sweep()
	return l, nil
}

func (l *listener) Addr() string { return l.kl.Addr().String() }

func (l *listener) accept() {
	defer close(l.acceptDone)
	for {
		sess, err := l.kl.AcceptKCP()
		if err != nil {
			return
		}
		// kcp-go creates a session for any datagram from a new address; it only
		// becomes a connection after the hello (see handshake).
		c := newConn(&l.t.s, sess, l.h)
		c.l = l
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			_ = sess.Close()
			continue
		}
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		go l.handshake(c)
	}
}

// handshake waits for the client's hello, answers it and reports Connected. A session
// that does not start with a hello is closed without any callback.
func (l *listener) handshake(c *conn) {
	r := newReader(c.sess, c.max)
	tag, msg, err := r.next()
	if err != nil || tag != tagHello || !hasMagic(msg) {
		c.end(fmt.Errorf("kcp from %s: no hello", c.raddr), false)
		return
	}
	l.mu.Lock()
	if l.closed || c.closed.Load() {
		l.mu.Unlock()
		c.end(nil, false)
		return
	}
	l.connecting.Add(1)
	l.mu.Unlock()
	c.established.Store(true)
	c.heard.set()
	if c.write(helloAckMsg) == nil {
		c.sent.set()
	}
	l.h.Connected(c)
	l.connecting.Done()
	c.serve(r)
}

// drainAccepts bounds: after the listener closed, kcp-go's Accept returns a queued session or
// a closed error at random, so it is asked until it said "closed" drainMisses times in a row (a
// queued session is then missed with odds below 2^-37); drainWait bounds the wait for kcp-go's
// reader to finish the batch of datagrams it was handling when the socket closed.
const (
	drainMisses = 64
	drainWait   = 2 * time.Second
)

// drainAccepts closes the sessions kcp-go made but nobody accepted. kcp-go makes a session for
// every datagram from an address without one (a player's last packets after its session ended,
// strangers), keeps making them from the rest of its current batch of up to 256 datagrams after
// the socket closed, and never closes the ones left in its accept queue, each holding a
// goroutine and buffers. Its reader has finished once Accept reports the socket's read error
// instead of the listener's closed error.
func (l *listener) drainAccepts() {
	deadline := time.Now().Add(drainWait)
	readerDone := false
	for misses := 0; misses < drainMisses; {
		sess, err := l.kl.AcceptKCP()
		switch {
		case err == nil:
			misses = 0
			_ = sess.Close()
		case !errors.Is(err, io.ErrClosedPipe):
			readerDone = true
			misses++
		case readerDone || time.Now().After(deadline):
			misses++
		default:
			time.Sleep(time.Millisecond)
		}
	}
}

func (l *listener) forget(c *conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// sweep runs every tick: keepalives and timeouts for connections, the handshake
// deadline for sessions that never said hello.
func (l *listener) sweep() {
	defer close(l.sweepDone)
	tk := time.NewTicker(l.t.s.tick())
	defer tk.Stop()
	var conns []*conn
	for {
		select {
		case <-l.stopSweep:
			return
		case <-tk.C:
		}
		now := time.Now()
		conns = conns[:0]
		l.mu.Lock()
		for c := range l.conns {
			conns = append(conns, c)
		}
		l.mu.Unlock()
		for _, c := range conns {
			if c.established.Load() {
				c.check(now)
			} else if now.Sub(c.created) > l.t.s.timeout {
				c.end(fmt.Errorf("kcp from %s: no hello within %v", c.raddr, l.t.s.timeout), false)
			}
		}
		clear(conns)
	}
}

// Close tells every player (close message), closes their sessions, and after a short
// grace for those messages closes the socket. Disconnected callbacks follow from the
// readers. It waits for Connected callbacks in progress, so it must not be called
// from inside Connected.
func (l *listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	conns := make([]*conn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()

	l.connecting.Wait()
	notified := false
	for _, c := range conns {
		est := c.established.Load()
		notified = notified || est
		c.end(nil, est)
	}
	if notified {
		time.Sleep(closeGrace)
	}
	err := l.kl.Close()
	<-l.acceptDone
	l.drainAccepts()
	close(l.stopSweep)
	<-l.sweepDone
	if err != nil {
		return fmt.Errorf("kcp listener close: %w", err)
	}
	return nil
}
