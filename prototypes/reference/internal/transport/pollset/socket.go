package pollset

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Sockaddr is addr (an IP and a port, as resolved by net) as a raw socket address and its family.
func Sockaddr(ip net.IP, port int, zone string) (int, unix.Sockaddr) {
	if ip4 := ip.To4(); ip4 != nil {
		return unix.AF_INET, &unix.SockaddrInet4{Port: port, Addr: [4]byte(ip4)}
	}
	s6 := &unix.SockaddrInet6{Port: port, Addr: [16]byte(ip.To16())}
	if zone != "" {
		if ifi, err := net.InterfaceByName(zone); err == nil {
			s6.ZoneId = uint32(ifi.Index)
		}
	}
	return unix.AF_INET6, s6
}

// WaitFor polls one descriptor for events, at most for d (rounded up to a millisecond):
// only a handshake and a full send buffer wait, so millisecond steps cost nothing.
func WaitFor(fd int, events int16, d time.Duration) (bool, error) {
	if d <= 0 {
		return false, nil
	}
	ms := int((d + time.Millisecond - 1) / time.Millisecond)
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
		n, err := unix.Poll(pfd, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("poll: %w", err)
		}
		return n > 0, nil
	}
}

// WriteAll writes b whole to the non-blocking descriptor; while its send buffer is full
// it waits for room, as a write on a net.Conn does, but at most wait in all.
func WriteAll(fd int, b []byte, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		switch {
		case errors.Is(err, unix.EAGAIN):
			ready, perr := WaitFor(fd, unix.POLLOUT, time.Until(deadline))
			if perr != nil {
				return perr
			}
			if !ready {
				return fmt.Errorf("send buffer full for %v: %w", wait, err)
			}
		case errors.Is(err, unix.EINTR):
		case err != nil:
			return err
		default:
			b = b[n:]
		}
	}
	return nil
}

// ErrClosed is returned by a Socket's Read and Write after its End.
var ErrClosed = errors.New("socket closed")

// Socket is what every client connection on a Set has: a raw non-blocking descriptor,
// guarded against its close (reads and writes hold the read lock, End the write lock, so
// a descriptor number the kernel reuses is never read or written as this socket), and
// the reason it ended. A connection embeds it and implements the rest of Member.
type Socket struct {
	fd         int
	mu         sync.RWMutex
	closed     atomic.Bool
	reasonOnce sync.Once
	reason     error
}

// NewSocket wraps a connected non-blocking descriptor.
func NewSocket(fd int) Socket { return Socket{fd: fd} }

// FD implements Member.
func (s *Socket) FD() int { return s.fd }

// Closed reports whether End was called.
func (s *Socket) Closed() bool { return s.closed.Load() }

// Reason is why the socket was closed: the first End's reason (nil for a local close).
func (s *Socket) Reason() error { return s.reason }

// Read is one read(2), or ErrClosed; EAGAIN when nothing is queued.
func (s *Socket) Read(buf []byte) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return 0, ErrClosed
	}
	return unix.Read(s.fd, buf)
}

// Write writes b whole (WriteAll, waiting at most wait for room), or returns ErrClosed.
func (s *Socket) Write(b []byte, wait time.Duration) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return ErrClosed
	}
	return WriteAll(s.fd, b, wait)
}

// End records reason (the first caller's wins), runs last on the descriptor (a goodbye
// to the peer) unless nil, takes member out of set and closes the descriptor; set then
// calls member's Ended once. It reports false when the socket was ended already.
func (s *Socket) End(set *Set, member Member, reason error, last func(fd int)) bool {
	s.reasonOnce.Do(func() { s.reason = reason })
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return false
	}
	if last != nil {
		last(s.fd)
	}
	set.Remove(member)
	_ = unix.Close(s.fd)
	return true
}
