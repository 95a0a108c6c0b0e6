//go:build !linux

package webrtc

import (
	"errors"
	"net"
)

// setSockBuf sets SO_RCVBUF and SO_SNDBUF to n (capped by the OS).
func setSockBuf(c *net.UDPConn, n int) error {
	return errors.Join(c.SetReadBuffer(n), c.SetWriteBuffer(n))
}

func sockBufs(*net.UDPConn) (rcv, snd int, err error) {
	return 0, 0, errors.ErrUnsupported
}
