package udp

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"netstick/prototypes/reference/internal/sched"
)

// rxLoop reads every socket the transport dialled over one level-triggered epoll set and
// runs their callbacks on whichever goroutine polls it: its own goroutine, or, once a
// caller drives it (transport.Poller), the caller's thread inside Wait.
//
// Why not a reader goroutine per connection on Go's netpoller: profiled at 200 players
// (stream, 60 Hz), the receive path was about half of the client's CPU. Each datagram
// woke the netpoller, readied its reader goroutine, was read, and was read again only to
// get EAGAIN before the goroutine parked (edge-triggered polling must drain). Here a
// wake-up costs one epoll wait for every socket that is ready and one read per datagram;
// level triggering reports a socket with more queued again. Driven by the client's
// dispatcher, one wake-up of one thread serves both the sends that are due and the
// datagrams that arrived: an own goroutine blocked in epoll_wait doubled the client's
// context switches, because each wake-up had to win a P back from the scheduler.
//
// While not driven the loop runs only while it has sockets, so a transport that dials
// nothing has no goroutine and no descriptors.
type rxLoop struct {
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
	conns     map[int]*cliConn // by socket descriptor
	ended     []*cliConn       // closed; their Disconnected is still owed
}

func newRxLoop() rxLoop { return rxLoop{epfd: -1, wakefd: -1} }

// add registers a connected socket; its callbacks run on the loop from now on.
func (l *rxLoop) add(c *cliConn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.epfd < 0 {
		if err := l.open(); err != nil {
			return err
		}
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(c.fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
		return fmt.Errorf("udp: epoll add: %w", err)
	}
	l.conns[c.fd] = c
	l.startLocked()
	return nil
}

// startLocked starts the loop's own goroutine unless it runs or a caller drives the loop.
func (l *rxLoop) startLocked() {
	if !l.goroutine && !l.driven {
		l.goroutine = true
		go l.run()
	}
}

// open creates the epoll set and the wake-up eventfd (with mu held).
func (l *rxLoop) open() error {
	if l.conns == nil {
		l.conns = map[int]*cliConn{}
		l.buf = make([]byte, 65536)
		l.events = make([]unix.EpollEvent, 256)
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("udp: epoll_create1: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = unix.Close(epfd)
		return fmt.Errorf("udp: eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakefd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		_ = unix.Close(epfd)
		_ = unix.Close(wakefd)
		return fmt.Errorf("udp: epoll add eventfd: %w", err)
	}
	l.epfd, l.wakefd = epfd, wakefd
	return nil
}

// wakeLocked ends a blocking wait of the loop's goroutine (with mu held).
func (l *rxLoop) wakeLocked() {
	if l.wakefd >= 0 {
		one := [8]byte{1}
		_, _ = unix.Write(l.wakefd, one[:])
	}
}

// remove takes a socket out of the set before it is closed (so a descriptor number the
// kernel reuses is never read as this connection) and queues its Disconnected.
func (l *rxLoop) remove(c *cliConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[c.fd] == c {
		delete(l.conns, c.fd)
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
	}
	l.ended = append(l.ended, c)
	l.wakeLocked()
	l.startLocked() // the last connection's Disconnected still needs a poller
}

func (l *rxLoop) lookup(fd int) *cliConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns[fd]
}

// run is the loop's own goroutine: it blocks in epoll_wait and delivers, until a caller
// drives the loop or no socket is left.
func (l *rxLoop) run() {
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
func (l *rxLoop) closeLocked() {
	if l.epfd >= 0 {
		_ = unix.Close(l.epfd)
		_ = unix.Close(l.wakefd)
		l.epfd, l.wakefd = -1, -1
	}
}

// drive hands the loop to the caller (on) or back to its own goroutine (off).
func (l *rxLoop) drive(on bool) {
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

// wait polls until deadlineNs (CLOCK_MONOTONIC) at the latest, delivering what arrived;
// it may return early. It holds the caller's thread and P, as the dispatcher's sleep does
// (sched.EpollWaitUntil): the wait is at most a few milliseconds.
func (l *rxLoop) wait(deadlineNs, nowNs int64) {
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
func (l *rxLoop) handle(n int, err error, wakefd int) {
	if err != nil && !errors.Is(err, unix.EINTR) {
		l.fail(fmt.Errorf("udp: epoll wait: %w", err))
	}
	for _, ev := range l.events[:max(n, 0)] {
		fd := int(ev.Fd)
		if fd == wakefd {
			var b [8]byte
			_, _ = rawRead(fd, b[:])
		} else if c := l.lookup(fd); c != nil { // nil: removed since the wait returned
			c.readOne(l.buf)
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
			c.h.Disconnected(c, c.reason)
		}
	}
}

// fail ends every connection when the set itself broke (never seen: it would be a bug).
func (l *rxLoop) fail(err error) {
	l.mu.Lock()
	conns := make([]*cliConn, 0, len(l.conns))
	for _, c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.end(err, false)
	}
}
