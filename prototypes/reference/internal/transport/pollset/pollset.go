// Package pollset reads many client sockets on one goroutine, over one level-triggered epoll
// set, and runs their callbacks on whichever goroutine polls it: its own goroutine, or, once a
// caller drives it (transport.Poller), the caller's thread inside Wait.
//
// Why not a reader goroutine per connection on Go's netpoller: profiled at 200 players
// (stream, 60 Hz, udp), the receive path was about half of the client's CPU. Each datagram
// woke the netpoller, readied its reader goroutine, was read, and was read again only to
// get EAGAIN before the goroutine parked (edge-triggered polling must drain). Here a
// wake-up costs one epoll wait for every socket that is ready and one read per message;
// level triggering reports a socket with more queued again. Driven by the client's
// dispatcher, one wake-up of one thread serves both the sends that are due and the
// messages that arrived: a goroutine of its own blocked in epoll_wait doubled the client's
// context switches, because each wake-up had to win a P back from the scheduler. Measured
// against the reader goroutines (udp, 200 players, interleaved runs): context switches -37 %,
// the client's CPU by getrusage only -3.5 %, because most of it is the kernel's send path.
//
// The udp client uses it. The tcp client did too, and measured 2.5 % more CPU than with a
// reader goroutine per connection (interleaved runs at 200 players): over TCP the kernel's
// stack, not the hand-off, is the cost, so tcp keeps net.Conn.
//
// While not driven the set polls only while it has members, so a transport that dials
// nothing has no goroutine and no descriptors.
package pollset

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"netstick/prototypes/reference/internal/sched"
)

// Member is a socket the set reads: a raw non-blocking descriptor outside Go's netpoller.
type Member interface {
	// FD is the socket; it stays open until the member was removed.
	FD() int
	// ReadReady reads what is queued (one message is enough: a socket with more is reported
	// again) and delivers it, on the polling goroutine; buf is scratch space for the call.
	ReadReady(buf []byte)
	// Fail ends the member with err: the set itself broke.
	Fail(err error)
	// Ended is called once after Remove, on the polling goroutine, so never concurrently
	// with the member's ReadReady.
	Ended()
}

// Set is the epoll set of a transport's client sockets and the state of who polls it.
type Set struct {
	// pollMu is held by whoever polls: the loop's goroutine or Wait. Callbacks of one
	// connection are therefore never concurrent.
	pollMu sync.Mutex
	buf    []byte
	events []unix.EpollEvent

	mu        sync.Mutex
	epfd      int // -1 while closed
	wakefd    int // eventfd: ends a blocking wait (an ended connection, a change of driver)
	goroutine bool
	driven    bool
	conns     map[int]Member // by socket descriptor
	ended     []Member       // closed; their Disconnected is still owed
}

// New returns an empty set.
func New() *Set { return &Set{epfd: -1, wakefd: -1} }

// Add registers a member; its callbacks run on the set's poller from now on.
func (l *Set) Add(c Member) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.epfd < 0 {
		if err := l.open(); err != nil {
			return err
		}
	}
	fd := c.FD()
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll add: %w", err)
	}
	l.conns[fd] = c
	l.startLocked()
	return nil
}

// startLocked starts the loop's own goroutine unless it runs or a caller drives the loop.
func (l *Set) startLocked() {
	if !l.goroutine && !l.driven {
		l.goroutine = true
		go l.run()
	}
}

// open creates the epoll set and the wake-up eventfd (with mu held).
func (l *Set) open() error {
	if l.conns == nil {
		l.conns = map[int]Member{}
		l.buf = make([]byte, 65536)
		l.events = make([]unix.EpollEvent, 256)
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = unix.Close(epfd)
		return fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakefd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		_ = unix.Close(epfd)
		_ = unix.Close(wakefd)
		return fmt.Errorf("epoll add eventfd: %w", err)
	}
	l.epfd, l.wakefd = epfd, wakefd
	return nil
}

// wakeLocked ends a blocking wait of the loop's goroutine (with mu held).
func (l *Set) wakeLocked() {
	if l.wakefd >= 0 {
		one := [8]byte{1}
		_, _ = unix.Write(l.wakefd, one[:])
	}
}

// Remove takes a member out of the set; call it before closing the socket, so that a
// descriptor number the kernel reuses is never read as this member. Its Ended follows.
func (l *Set) Remove(c Member) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fd := c.FD()
	if l.conns[fd] == c {
		delete(l.conns, fd)
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	}
	l.ended = append(l.ended, c)
	l.wakeLocked()
	l.startLocked() // the last connection's Disconnected still needs a poller
}

func (l *Set) lookup(fd int) Member {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns[fd]
}

// run is the loop's own goroutine: it blocks in epoll_wait and delivers, until a caller
// drives the loop or no socket is left.
func (l *Set) run() {
	for {
		l.pollMu.Lock()
		l.mu.Lock()
		if l.driven || (len(l.conns) == 0 && len(l.ended) == 0) {
			if !l.driven {
				l.closeLocked()
			}
			l.goroutine = false
			l.mu.Unlock()
			l.pollMu.Unlock()
			return
		}
		epfd, wakefd := l.epfd, l.wakefd
		l.mu.Unlock()
		n, err := unix.EpollWait(epfd, l.events, -1)
		l.handle(n, err, wakefd)
		l.pollMu.Unlock()
	}
}

// closeLocked closes the set once nothing uses it (mu and pollMu held).
func (l *Set) closeLocked() {
	if l.epfd >= 0 {
		_ = unix.Close(l.epfd)
		_ = unix.Close(l.wakefd)
		l.epfd, l.wakefd = -1, -1
	}
}

// Drive hands the polling to the caller (on: from its return, callbacks run only inside
// Wait) or back to the set's own goroutine (off).
func (l *Set) Drive(on bool) {
	if on {
		defer func() { l.pollMu.Lock(); l.pollMu.Unlock() }() // the goroutine has let go
	}
	l.mu.Lock()
	l.driven = on
	switch {
	case on:
		l.wakeLocked() // the goroutine sees driven and returns
	case len(l.conns) > 0 || len(l.ended) > 0:
		l.startLocked()
	case !l.goroutine:
		l.closeLocked() // nobody polls any more
	}
	l.mu.Unlock()
}

// Wait polls until deadlineNs (CLOCK_MONOTONIC) at the latest, delivering what arrived;
// it may return early. It holds the caller's thread and P, as the dispatcher's sleep does
// (sched.EpollWaitUntil): the wait is at most a few milliseconds.
func (l *Set) Wait(deadlineNs, nowNs int64) {
	l.pollMu.Lock()
	defer l.pollMu.Unlock()
	l.mu.Lock()
	epfd, wakefd := l.epfd, l.wakefd
	l.mu.Unlock()
	if epfd < 0 {
		sched.SleepUntil(deadlineNs) // nothing dialled: nothing to read
		return
	}
	n, err := sched.EpollWaitUntil(epfd, l.events, deadlineNs, nowNs)
	l.handle(n, err, wakefd)
}

// handle delivers one wait's events and then the Disconnected of ended connections.
func (l *Set) handle(n int, err error, wakefd int) {
	if err != nil && !errors.Is(err, unix.EINTR) {
		l.fail(fmt.Errorf("epoll wait: %w", err))
	}
	for _, ev := range l.events[:max(n, 0)] {
		fd := int(ev.Fd)
		if fd == wakefd {
			var b [8]byte
			_, _ = unix.Read(fd, b[:])
		} else if c := l.lookup(fd); c != nil { // nil: removed since the wait returned
			c.ReadReady(l.buf)
		}
	}
	for {
		l.mu.Lock()
		ended := l.ended
		l.ended = nil
		l.mu.Unlock()
		if len(ended) == 0 {
			return
		}
		for _, c := range ended {
			c.Ended()
		}
	}
}

// fail ends every member when the set itself broke (never seen: it would be a bug).
func (l *Set) fail(err error) {
	l.mu.Lock()
	conns := make([]Member, 0, len(l.conns))
	for _, c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.Fail(err)
	}
}
