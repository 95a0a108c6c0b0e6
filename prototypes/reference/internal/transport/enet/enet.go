//go:build linux && cgo

package enet

/*
#cgo pkg-config: libenet
#include "nsenet.h"
*/
import "C"

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"netstick/prototypes/reference/internal/transport"
)

const (
	maxReliableBytes   = 16 << 20
	maxUnreliableBytes = 64 << 10
	// maxPeerLimit is ENET_PROTOCOL_MAXIMUM_PEER_ID: enet_host_create refuses more.
	maxPeerLimit = 4095
)

var optionKeys = []string{"max_peers", "sockbuf", "timeout_ms", "linger_ms", "throttle",
	"merged_acks", "seed_rtt", "hurry_verify"}

func init() {
	transport.Register("enet", func(opts transport.Options) (transport.Transport, error) {
		return New(opts)
	})
}

// Transport is the enet transport.
type Transport struct {
	maxPeers  int
	sockbuf   int
	timeoutMS int
	linger    time.Duration
	throttle  bool
	// The variants' tunings (nstuned.c), all off in stock ENet.
	mergedAcks  bool
	seedRTT     bool
	hurryVerify bool
}

// New builds the transport from its options (see the package comment).
func New(opts transport.Options) (*Transport, error) {
	if err := transport.CheckOptions("enet", opts, optionKeys...); err != nil {
		return nil, err
	}
	t := &Transport{maxPeers: 1024, sockbuf: 4 << 20, timeoutMS: 3000, linger: 250 * time.Millisecond, throttle: true}
	var err error
	if t.maxPeers, err = intOpt(opts, "max_peers", t.maxPeers, 1, maxPeerLimit); err != nil {
		return nil, err
	}
	if t.sockbuf, err = intOpt(opts, "sockbuf", t.sockbuf, 0, 1<<30); err != nil {
		return nil, err
	}
	if t.timeoutMS, err = intOpt(opts, "timeout_ms", t.timeoutMS, 100, 600000); err != nil {
		return nil, err
	}
	lingerMS, err := intOpt(opts, "linger_ms", int(t.linger/time.Millisecond), 0, 60000)
	if err != nil {
		return nil, err
	}
	t.linger = time.Duration(lingerMS) * time.Millisecond
	for key, dst := range map[string]*bool{"throttle": &t.throttle, "merged_acks": &t.mergedAcks,
		"seed_rtt": &t.seedRTT, "hurry_verify": &t.hurryVerify} {
		if v, ok := opts[key]; ok {
			if *dst, err = strconv.ParseBool(v); err != nil {
				return nil, fmt.Errorf("enet option %s=%q: want true or false", key, v)
			}
		}
	}
	return t, nil
}

// tuning is the NS_TUNE_* bits of the host's tunings (0: stock ENet).
func (t *Transport) tuning() C.int {
	var bits C.int
	if t.mergedAcks {
		bits |= C.NS_TUNE_MERGED_ACKS
	}
	if t.hurryVerify {
		bits |= C.NS_TUNE_HURRY_VERIFY
	}
	return bits
}

// Settings implements transport.Settings (prototype.yaml, transports enet settings). The
// variants' tunings are not settings: the variant names them (meta.json's transport_options).
func (t *Transport) Settings() map[string]string {
	return map[string]string{
		"sockbuf": strconv.Itoa(t.sockbuf), "timeout_ms": strconv.Itoa(t.timeoutMS),
		"max_peers": strconv.Itoa(t.maxPeers), "channel_limit": "2",
		"unreliable_packet_flags": "ENET_PACKET_FLAG_UNRELIABLE_FRAGMENT",
		"flush":                   "immediate",
		"linger_ms":               strconv.Itoa(int(t.linger / time.Millisecond)),
	}
}

func intOpt(opts transport.Options, key string, def, lo, hi int) (int, error) {
	v, ok := opts[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("enet option %s=%q: want an integer in [%d, %d]", key, v, lo, hi)
	}
	return n, nil
}

// Name implements transport.Transport.
func (*Transport) Name() string { return "enet" }

// Caps implements transport.Transport.
func (*Transport) Caps() transport.Caps {
	return transport.Caps{NativeReliable: true, NativeUnreliable: true,
		MaxReliableBytes: maxReliableBytes, MaxUnreliableBytes: maxUnreliableBytes}
}

var (
	initOnce sync.Once
	initErr  error
)

// initialize calls enet_initialize once per process; libenet needs it before any host.
func initialize() error {
	initOnce.Do(func() {
		if C.ns_init() != 0 {
			initErr = fmt.Errorf("enet_initialize failed")
		}
	})
	return initErr
}

// resolve4 turns host:port into an IPv4 address; ENet 1.3.17 speaks IPv4 only. An
// empty host means any address (for Listen).
func resolve4(ctx context.Context, addr string) ([4]byte, uint16, error) {
	var ip4 [4]byte
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return ip4, 0, err
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil {
		return ip4, 0, fmt.Errorf("bad port %q", ps)
	}
	if host == "" {
		return ip4, uint16(port), nil
	}
	ip := net.ParseIP(host)
	if ip == nil {
		ips, err := net.DefaultResolver.LookupIP(ctx, "ip4", host)
		if err != nil {
			return ip4, 0, err
		}
		ip = ips[0]
	}
	v4 := ip.To4()
	if v4 == nil {
		return ip4, 0, fmt.Errorf("%s is not an IPv4 address (ENet 1.3.17 is IPv4 only)", host)
	}
	copy(ip4[:], v4)
	return ip4, uint16(port), nil
}

func formatAddr(ip4 [4]byte, port uint16) string {
	return net.JoinHostPort(net.IP(ip4[:]).String(), strconv.Itoa(int(port)))
}
