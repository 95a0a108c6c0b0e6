// Package framing carries channel-tagged messages over a byte stream the way Mirror's
// Telepathy does: a 4-byte big-endian length, then the message. Netstick adds one
// channel byte after the length so the receiver knows which channel a message used.
package framing

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"netstick/prototypes/reference/internal/transport"
)

// HeaderBytes is the per-message overhead on the stream.
const HeaderBytes = 5

// MaxMessageBytes bounds one message, so a corrupt length cannot make a reader
// allocate gigabytes.
const MaxMessageBytes = 16 << 20

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// Frame returns header+msg in one pooled buffer so the caller can write it with a
// single Write (one syscall, and atomic with respect to other writers of the conn).
// The caller must call Release when done.
func Frame(ch transport.Channel, msg []byte) (*[]byte, error) {
	if len(msg) > MaxMessageBytes {
		return nil, fmt.Errorf("%d B: %w", len(msg), transport.ErrTooLarge)
	}
	bp := bufPool.Get().(*[]byte)
	b := (*bp)[:0]
	b = binary.BigEndian.AppendUint32(b, uint32(len(msg)))
	b = append(b, byte(ch))
	b = append(b, msg...)
	*bp = b
	return bp, nil
}

// Release returns a buffer from Frame to the pool.
func Release(bp *[]byte) {
	if cap(*bp) <= 64<<10 {
		bufPool.Put(bp)
	}
}

// Reader reads frames from a stream, reusing one buffer.
type Reader struct {
	r   *bufio.Reader
	buf []byte
	hdr [HeaderBytes]byte
}

// NewReader wraps r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), buf: make([]byte, 4096)}
}

// Next returns the next message; msg is valid until the next call.
func (fr *Reader) Next() (transport.Channel, []byte, error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(fr.hdr[:4])
	ch := transport.Channel(fr.hdr[4])
	if n > MaxMessageBytes {
		return 0, nil, fmt.Errorf("frame length %d exceeds %d B: stream corrupt", n, MaxMessageBytes)
	}
	if ch != transport.Reliable && ch != transport.Unreliable {
		return 0, nil, fmt.Errorf("frame channel byte %d: stream corrupt", fr.hdr[4])
	}
	if int(n) > cap(fr.buf) {
		fr.buf = make([]byte, n)
	}
	msg := fr.buf[:n]
	if _, err := io.ReadFull(fr.r, msg); err != nil {
		return 0, nil, err
	}
	return ch, msg, nil
}
