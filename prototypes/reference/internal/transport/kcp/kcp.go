// Package kcp is KCP over UDP with github.com/xtaci/kcp-go/v5 in message mode and
// kcp2k-like "turbo" settings: SetNoDelay(1, 10, 2, 1), 1024-segment windows, MTU
// 1200, no write delay, no FEC, no encryption. The server is one kcp-go Listener (one
// UDP socket, 4 MiB buffers); each client has its own connected UDP socket, so an
// ICMP port-unreachable ends a dial or a connection at once.
//
// Channels: KCP has no unreliable mode (kcp2k sends unreliable messages as raw UDP
// beside KCP; this transport does not), so Unreliable messages ride the reliable,
// ordered KCP stream and Caps says NativeUnreliable=false. Each message carries a tag
// byte with its channel, so it is delivered with the channel it was sent on.
//
// Message size: kcp-go's UDPSession.Write cuts anything longer than one segment
// (mss = mtu-24 = 1176 B by default) into separate KCP messages, so KCP's own
// fragment reassembly (at most 255 fragments, and no more than rcv_wnd) is not
// reachable through the session API. Messages longer than one segment therefore get
// a 5-byte header (tag + 4-byte length) and are reassembled here; the limit is kept
// at what native KCP message mode could carry, min(255, rcvwnd) x mss - 5 =
// 299,875 B by default, which also bounds what a peer can make the reader allocate.
//
// Connection life: KCP has no handshake and no FIN, so the first message is a hello
// that the server answers before it reports Connected (Dial returns after the answer;
// KCP retransmits the hello until ctx ends). Close sends a close message. A peer that
// sent no message for timeout_ms is dropped; an idle side sends a keepalive message in
// every timeout_ms/4 period without other traffic. kcp-go detects dead links
// internally but does not expose it, so the timeout is the backstop.
//
// LibRTT is kcp-go's smoothed RTT (GetSRTT), in whole milliseconds as KCP keeps it:
// on loopback it reads 0 (less than 1 ms).
//
// Options (-param t.key=value):
//
//	nodelay      1        KCP nodelay flag (0 or 1)
//	interval_ms  10       KCP internal update interval (10..5000)
//	resend       2        fast retransmit after this many duplicate ACKs (0 = off)
//	nc           1        1 disables congestion control (0 or 1)
//	sndwnd       1024     send window in segments
//	rcvwnd       1024     receive window in segments
//	mtu          1200     KCP MTU in bytes, without IP/UDP headers (64..1500)
//	timeout_ms   3000     silence after which the peer counts as gone (>= 100)
//	sockbuf      4194304  SO_RCVBUF/SO_SNDBUF of every socket (0 keeps the default)
package kcp

import (
	"fmt"
	"strconv"
	"time"

	"netstick/prototypes/reference/internal/transport"
)

// kcpOverhead is KCP's per-segment header (conv, cmd, frg, wnd, ts, sn, una, len).
const kcpOverhead = 24

// maxFragments is ikcp_send's limit on fragments per message (frg is one byte).
const maxFragments = 255

func init() {
	transport.Register("kcp", func(opts transport.Options) (transport.Transport, error) {
		return New(opts)
	})
}

// settings are the parsed options.
type settings struct {
	nodelay, interval, resend, nc int
	sndwnd, rcvwnd, mtu           int
	timeout                       time.Duration
	sockbuf                       int
}

// Transport is the kcp transport.
type Transport struct {
	s settings
}

// Settings implements transport.Settings (prototype.yaml, transports kcp settings).
func (t *Transport) Settings() map[string]string {
	s := t.s
	return map[string]string{
		"nodelay": strconv.Itoa(s.nodelay), "interval_ms": strconv.Itoa(s.interval),
		"resend": strconv.Itoa(s.resend), "nc": strconv.Itoa(s.nc),
		"sndwnd": strconv.Itoa(s.sndwnd), "rcvwnd": strconv.Itoa(s.rcvwnd), "mtu": strconv.Itoa(s.mtu),
		"sockbuf": strconv.Itoa(s.sockbuf), "timeout_ms": strconv.Itoa(int(s.timeout / time.Millisecond)),
	}
}

// New builds the transport from its options.
func New(opts transport.Options) (*Transport, error) {
	if err := transport.CheckOptions("kcp", opts, "nodelay", "interval_ms", "resend", "nc",
		"sndwnd", "rcvwnd", "mtu", "timeout_ms", "sockbuf"); err != nil {
		return nil, err
	}
	var s settings
	var timeoutMs int
	for _, o := range []struct {
		key         string
		dst         *int
		def, lo, hi int
	}{
		{"nodelay", &s.nodelay, 1, 0, 1},
		{"interval_ms", &s.interval, 10, 10, 5000},
		{"resend", &s.resend, 2, 0, 1000},
		{"nc", &s.nc, 1, 0, 1},
		// The window travels in a 16-bit header field.
		{"sndwnd", &s.sndwnd, 1024, 1, 65535},
		{"rcvwnd", &s.rcvwnd, 1024, 1, 65535},
		{"mtu", &s.mtu, 1200, 64, 1500},
		{"timeout_ms", &timeoutMs, 3000, 100, 3_600_000},
		{"sockbuf", &s.sockbuf, 4 << 20, 0, 1 << 30},
	} {
		v, err := intOption(opts, o.key, o.def, o.lo, o.hi)
		if err != nil {
			return nil, err
		}
		*o.dst = v
	}
	s.timeout = time.Duration(timeoutMs) * time.Millisecond
	return &Transport{s: s}, nil
}

func intOption(opts transport.Options, key string, def, lo, hi int) (int, error) {
	str, ok := opts[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.Atoi(str)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("kcp option %s=%q: want an integer in [%d, %d]", key, str, lo, hi)
	}
	return v, nil
}

// mss is the payload of one KCP segment.
func (s *settings) mss() int { return s.mtu - kcpOverhead }

// maxMessage is the largest message on either channel (see the package comment).
func (s *settings) maxMessage() int {
	return min(maxFragments, s.rcvwnd)*s.mss() - longHeaderBytes
}

// tick is the keepalive/timeout period: an idle side sends at least one keepalive
// every timeout/2, so the peer never expires it.
func (s *settings) tick() time.Duration { return s.timeout / 4 }

// Name implements transport.Transport.
func (*Transport) Name() string { return "kcp" }

// Caps implements transport.Transport.
func (t *Transport) Caps() transport.Caps {
	m := t.s.maxMessage()
	return transport.Caps{NativeReliable: true, NativeUnreliable: false,
		MaxReliableBytes: m, MaxUnreliableBytes: m}
}
