package pollset

import (
	"errors"
	"fmt"
	"net"
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
