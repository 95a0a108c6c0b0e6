package main

// One AF_PACKET raw socket per veth end: it receives every frame arriving on the
// interface and injects frames into it.

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// Link is a raw socket bound to one interface.
type Link struct {
	Name    string
	Index   int
	MTU     int
	fd      int
	outAddr unix.SockaddrLinklayer
}

// recvTimeoutNs bounds how long a receiving thread sits in recvfrom, so it notices a
// stop request within this time even when no frame arrives (closing a socket does not
// wake a thread blocked on it).
const recvTimeoutNs = 100_000_000

// rcvBufBytes absorbs bursts while a receiving thread is descheduled on a busy 2-core
// machine (the kernel caps it at net.core.rmem_max, 4 MiB here).
const rcvBufBytes = 4 << 20

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// OpenLink opens the raw socket for interface name. The interface must exist and be up.
func OpenLink(name string) (*Link, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", name, err)
	}
	if ifi.Flags&net.FlagUp == 0 {
		return nil, fmt.Errorf("interface %q is down (expected it up: ip link set %s up)", name, name)
	}
	// Protocol 0 at creation: the socket receives nothing until bind() names the
	// interface. Creating it with ETH_P_ALL would queue frames from every interface
	// in the namespace in the gap before bind, and they would be forwarded the wrong way.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("interface %q: AF_PACKET socket (needs root or CAP_NET_RAW): %w", name, err)
	}
	l := &Link{Name: name, Index: ifi.Index, MTU: ifi.MTU, fd: fd}
	l.outAddr = unix.SockaddrLinklayer{Ifindex: ifi.Index}
	if err := l.setup(); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("interface %q: %w", name, err)
	}
	return l, nil
}

func (l *Link) setup() error {
	// Without this the socket would also see every frame we inject into the interface
	// and forward it back: a loop.
	if err := unix.SetsockoptInt(l.fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return fmt.Errorf("PACKET_IGNORE_OUTGOING: %w", err)
	}
	// Promiscuous through a socket membership, so the kernel drops it again when the
	// socket closes, even if the process is killed.
	mreq := unix.PacketMreq{Ifindex: int32(l.Index), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(l.fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return fmt.Errorf("promiscuous membership: %w", err)
	}
	if err := unix.SetsockoptInt(l.fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvBufBytes); err != nil {
		return fmt.Errorf("SO_RCVBUF: %w", err)
	}
	tv := unix.NsecToTimeval(recvTimeoutNs)
	if err := unix.SetsockoptTimeval(l.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("SO_RCVTIMEO: %w", err)
	}
	if err := unix.Bind(l.fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: l.Index}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}

// errTimeout is returned by Recv when no frame arrived within recvTimeoutNs.
var errTimeout = errors.New("receive timeout")

// Recv reads one frame into buf and returns its length.
func (l *Link) Recv(buf []byte) (int, error) {
	for {
		n, err := unix.Read(l.fd, buf)
		switch {
		case err == nil:
			return n, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return 0, errTimeout
		default:
			return 0, fmt.Errorf("receive on %s: %w", l.Name, err)
		}
	}
}

// Send injects one frame into the interface.
func (l *Link) Send(frame []byte) error {
	for {
		err := unix.Sendto(l.fd, frame, 0, &l.outAddr)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("send on %s (%d B frame, MTU %d): %w", l.Name, len(frame), l.MTU, err)
		}
		return nil
	}
}

// KernelDrops returns the frames the kernel dropped because the receive buffer was
// full. Reading PACKET_STATISTICS resets the kernel's counter, so call it once, at stop.
func (l *Link) KernelDrops() uint64 {
	st, err := unix.GetsockoptTpacketStats(l.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return 0
	}
	return uint64(st.Drops)
}

func (l *Link) Close() error { return unix.Close(l.fd) }
