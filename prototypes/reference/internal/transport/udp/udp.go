// Package udp is raw UDP, the latency floor: one datagram per message with a one-byte
// control header, no retransmission, no ordering. The server multiplexes every player
// on ONE socket (remote address -> connection); each client uses its own connected
// socket, so an ICMP port-unreachable surfaces as ECONNREFUSED and a dial to a dead
// port fails fast.
//
// Wire format: the first byte of every datagram is its type (see wire.go): reliable
// data 0x00, unreliable data 0x01 (the channel number itself, so the data path needs
// no translation), connect 0x02 and accept 0x03 (both followed by the 4-byte magic
// "NSU1"), disconnect 0x04, keepalive 0x05. Both channels are carried best effort and
// delivered with the channel they were sent on: Caps says NativeReliable=false.
//
// Dial sends a connect request every 100 ms until an accept arrives or ctx ends.
// A connection ends on an explicit disconnect datagram (sent best effort by Close),
// on ECONNREFUSED at the client, or when no datagram at all arrived from the peer for
// timeout_ms. Each side sends a keepalive in every timeout_ms/4 period in which it
// sent nothing else, so a silent but alive peer is never dropped.
//
// Options (-param t.key=value):
//
//	timeout_ms  3000     silence after which the peer counts as gone (ms, >= 100)
//	sockbuf     4194304  SO_RCVBUF and SO_SNDBUF of every socket (bytes; 0 keeps the
//	                     kernel default; the kernel caps it at net.core.[rw]mem_max)
package udp

import (
	"fmt"
	"strconv"
	"time"

	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/transport/pollset"
)

// MaxMessageBytes is the largest message on either channel: the largest UDP payload
// over IPv4 (65507) minus the type byte.
const MaxMessageBytes = 65507 - headerBytes

const (
	defaultTimeout = 3 * time.Second
	defaultSockbuf = 4 << 20
	// dialRetry is how often Dial repeats its connect request.
	dialRetry = 100 * time.Millisecond
)

func init() {
	transport.Register("udp", func(opts transport.Options) (transport.Transport, error) {
		return New(opts)
	})
}

// Transport is the udp transport.
type Transport struct {
	timeout time.Duration
	sockbuf int
	rx      *pollset.Set // reads every socket Dial opened
}

// Settings implements transport.Settings (prototype.yaml, transports udp settings).
func (t *Transport) Settings() map[string]string {
	return map[string]string{
		"sockbuf":    strconv.Itoa(t.sockbuf),
		"timeout_ms": strconv.Itoa(int(t.timeout / time.Millisecond)),
	}
}

// New builds the transport from its options.
func New(opts transport.Options) (*Transport, error) {
	if err := transport.CheckOptions("udp", opts, "timeout_ms", "sockbuf"); err != nil {
		return nil, err
	}
	ms, err := intOption(opts, "timeout_ms", int(defaultTimeout/time.Millisecond), 100, 3_600_000)
	if err != nil {
		return nil, err
	}
	buf, err := intOption(opts, "sockbuf", defaultSockbuf, 0, 1<<30)
	if err != nil {
		return nil, err
	}
	return &Transport{timeout: time.Duration(ms) * time.Millisecond, sockbuf: buf, rx: pollset.New()}, nil
}

func intOption(opts transport.Options, key string, def, lo, hi int) (int, error) {
	s, ok := opts[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("udp option %s=%q: want an integer in [%d, %d]", key, s, lo, hi)
	}
	return v, nil
}

// Drive implements transport.Poller: the client's dispatcher reads every dialled socket.
func (t *Transport) Drive(on bool) { t.rx.Drive(on) }

// Wait implements transport.Poller.
func (t *Transport) Wait(deadlineNs, nowNs int64) { t.rx.Wait(deadlineNs, nowNs) }

// Name implements transport.Transport.
func (*Transport) Name() string { return "udp" }

// Caps implements transport.Transport.
func (*Transport) Caps() transport.Caps {
	return transport.Caps{NativeReliable: false, NativeUnreliable: true,
		MaxReliableBytes: MaxMessageBytes, MaxUnreliableBytes: MaxMessageBytes}
}

// tick is the keepalive/timeout check period: a quarter of the timeout, so an idle
// side sends at least one keepalive every timeout/2 and the peer never expires it.
func (t *Transport) tick() time.Duration { return t.timeout / 4 }
