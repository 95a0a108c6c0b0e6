package webrtc

import (
	"fmt"
	"net"
	"syscall"
)

// setSockBuf sets SO_RCVBUF and SO_SNDBUF to n. It tries the FORCE variants first
// (they ignore net.core.rmem_max/wmem_max when the process has CAP_NET_ADMIN, as
// the benchmark's namespaced runs do) and falls back to the capped ones.
func setSockBuf(c *net.UDPConn, n int) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	cerr := rc.Control(func(fd uintptr) {
		for _, o := range [][2]int{{syscall.SO_RCVBUFFORCE, syscall.SO_RCVBUF}, {syscall.SO_SNDBUFFORCE, syscall.SO_SNDBUF}} {
			if syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, o[0], n) == nil {
				continue
			}
			if err := syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, o[1], n); err != nil {
				serr = fmt.Errorf("setsockopt %d=%d: %w", o[1], n, err)
				return
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	return serr
}

// sockBufs reads back SO_RCVBUF and SO_SNDBUF (the kernel reports twice the set
// value, its bookkeeping overhead included).
func sockBufs(c *net.UDPConn) (rcv, snd int, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var e1, e2 error
	if err := rc.Control(func(fd uintptr) {
		rcv, e1 = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
		snd, e2 = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
	}); err != nil {
		return 0, 0, err
	}
	if e1 != nil {
		return 0, 0, e1
	}
	return rcv, snd, e2
}
