package kcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	kcpgo "github.com/xtaci/kcp-go/v5"

	"netstick/prototypes/reference/internal/transport"
)

// Tag bytes: the first byte of every message written to a KCP session. Data tags
// carry the channel in bit 0; tagLong marks a message longer than one segment, whose
// tag is followed by a 4-byte big-endian length.
const (
	tagReliable   = byte(transport.Reliable)
	tagUnreliable = byte(transport.Unreliable)
	tagLong       = 0x02
	tagHello      = 0x10 // + magic; client -> server, first message
	tagHelloAck   = 0x11 // + magic; server -> client
	tagKeepalive  = 0x12
	tagClose      = 0x13

	longHeaderBytes = 5
)

const magic = "NSK1"

var (
	helloMsg     = []byte{tagHello, 'N', 'S', 'K', '1'}
	helloAckMsg  = []byte{tagHelloAck, 'N', 'S', 'K', '1'}
	keepaliveMsg = []byte{tagKeepalive}
	closeMsg     = []byte{tagClose}
)

// hasMagic checks the payload (after the tag) of a hello or hello-ack.
func hasMagic(p []byte) bool { return string(p) == magic }

var errPeerClosed = errors.New("peer closed the connection")

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// frame builds the bytes of one message in a pooled buffer. It is written with ONE
// Write: kcp-go then queues all its segments under one lock, so the segments of
// concurrent senders never interleave.
func frame(ch transport.Channel, msg []byte, mss int) *[]byte {
	bp := bufPool.Get().(*[]byte)
	b := (*bp)[:0]
	if 1+len(msg) <= mss {
		b = append(b, byte(ch))
	} else {
		b = append(b, tagLong|byte(ch))
		b = binary.BigEndian.AppendUint32(b, uint32(len(msg)))
	}
	*bp = append(b, msg...)
	return bp
}

func release(bp *[]byte) {
	if cap(*bp) <= 64<<10 {
		bufPool.Put(bp)
	}
}

// reader turns the session's KCP messages back into tagged messages.
type reader struct {
	sess *kcpgo.UDPSession
	max  int
	buf  []byte // one segment; kcp-go's Read returns one KCP message per call
	big  []byte // reassembly buffer for long messages, reused up to 64 KiB
}

func newReader(sess *kcpgo.UDPSession, max int) *reader {
	return &reader{sess: sess, max: max, buf: make([]byte, 1500)}
}

// next returns the tag (tagLong cleared) and payload of the next message; the
// payload is valid until the next call.
func (r *reader) next() (byte, []byte, error) {
	n, err := r.sess.Read(r.buf)
	if err != nil {
		return 0, nil, err
	}
	if n == 0 {
		return 0, nil, errors.New("empty kcp message")
	}
	tag := r.buf[0]
	if tag&^1 != tagLong {
		return tag, r.buf[1:n], nil
	}
	if n < longHeaderBytes {
		return 0, nil, fmt.Errorf("long message header of %d B", n)
	}
	size := int(binary.BigEndian.Uint32(r.buf[1:5]))
	if size > r.max || size < n-longHeaderBytes {
		return 0, nil, fmt.Errorf("long message of %d B (max %d, first segment %d B)", size, r.max, n)
	}
	var msg []byte
	if size <= 64<<10 {
		if cap(r.big) < size {
			r.big = make([]byte, 64<<10)
		}
		msg = r.big[:size]
	} else {
		msg = make([]byte, size)
	}
	have := copy(msg, r.buf[longHeaderBytes:n])
	for have < size {
		// The sender cut the message into segments of at most mss, so each Read
		// fills the next part; a Read into a shorter tail would only happen with a
		// corrupt stream, and kcp-go keeps the excess for the next Read.
		m, err := r.sess.Read(msg[have:])
		if err != nil {
			return 0, nil, err
		}
		have += m
	}
	return tag &^ tagLong, msg, nil
}
