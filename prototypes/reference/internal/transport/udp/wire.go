package udp

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"netstick/prototypes/reference/internal/transport"
)

// Datagram types: the first byte of every datagram. Data types equal the channel
// number so Send and receive need no lookup table.
const (
	tagReliable   = byte(transport.Reliable)
	tagUnreliable = byte(transport.Unreliable)
	tagConnect    = 0x02
	tagAccept     = 0x03
	tagDisconnect = 0x04
	tagKeepalive  = 0x05

	headerBytes = 1
)

// magic follows connect and accept so stray datagrams do not create connections.
const magic = "NSU1"

var (
	connectMsg    = []byte{tagConnect, 'N', 'S', 'U', '1'}
	acceptMsg     = []byte{tagAccept, 'N', 'S', 'U', '1'}
	disconnectMsg = []byte{tagDisconnect}
	keepaliveMsg  = []byte{tagKeepalive}
)

func hasMagic(d []byte) bool { return len(d) == 1+len(magic) && string(d[1:]) == magic }

var (
	errPeerClosed = errors.New("peer closed the connection")
	errRefused    = errors.New("peer unreachable (ICMP port unreachable)")
)

// bufPool holds datagram buffers so Send copies header+msg without allocating.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// frame returns a pooled buffer holding the type byte and msg; release it with
// bufPool.Put after the write.
func frame(ch transport.Channel, msg []byte) (*[]byte, error) {
	if ch != transport.Reliable && ch != transport.Unreliable {
		return nil, fmt.Errorf("udp send: unknown channel %v", ch)
	}
	if len(msg) > MaxMessageBytes {
		return nil, fmt.Errorf("udp send %d B (max %d): %w", len(msg), MaxMessageBytes, transport.ErrTooLarge)
	}
	bp := bufPool.Get().(*[]byte)
	b := append((*bp)[:0], byte(ch))
	*bp = append(b, msg...)
	return bp, nil
}

// activity tracks whether a connection sent or heard anything since the last tick.
// Flags instead of timestamps keep the per-message cost to one atomic load.
type activity struct {
	sent, heard flag
}

type flag struct{ v atomic.Bool }

// set marks the flag; the load first avoids a contended store per message.
func (f *flag) set() {
	if !f.v.Load() {
		f.v.Store(true)
	}
}

// take reports whether the flag was set and clears it.
func (f *flag) take() bool { return f.v.Swap(false) }
