// Package webrtc is the WebRTC data-channel transport (pion/webrtc v4): one
// PeerConnection per player with two pre-negotiated data channels, id 0 = Reliable
// (ordered, reliable) and id 1 = Unreliable (unordered, MaxRetransmits 0), both on
// the one SCTP association of the connection.
//
// Signalling is one HTTP POST: the client gathers its host candidates completely
// (no trickle), POSTs the offer SDP to http://host:port/offer and gets the answer
// SDP back. The server answers on TCP host:port and carries every peer's media on
// ONE UDP socket bound to the same host:port (pion ICEUDPMux), with large kernel
// buffers because hundreds of players share it. No STUN/TURN, no mDNS, UDP4 host
// candidates only; the loopback candidate is allowed so 127.0.0.1 works.
//
// Options (-param t.key=value):
//
//	unreliable  unreliable|reliable (default unreliable). With "reliable",
//	            Unreliable messages travel on the reliable channel (the "webrtc
//	            reliable" variant); they are marked with the WebRTC string PPID so
//	            the receiver still reports them as Unreliable, at zero byte cost.
//	iface       interface name whose IPv4 addresses may be ICE candidates
//	            (default: the interface(s) owning the address that routes to the
//	            server on the client, the listen address on the server).
//	sockbuf     SO_RCVBUF/SO_SNDBUF of the server's shared UDP socket in bytes
//	            (default 4194304). Set with SO_RCVBUFFORCE/SO_SNDBUFFORCE when the
//	            process may (CAP_NET_ADMIN), else capped at net.core.rmem_max/
//	            wmem_max. Client sockets (one per player) keep the kernel default.
//	maxmsg      largest message in bytes on either channel, advertised in the SDP
//	            as a=max-message-size (default 262144, the browsers' value). SCTP
//	            fragments messages above ~1200 B; on the Unreliable channel one lost
//	            fragment loses the whole message.
//	disconnect  ICE disconnected timeout (default 2s). The connection is reported
//	            Disconnected when ICE reaches disconnected, failed or closed.
//	failed      ICE failed timeout (default 4s).
//	keepalive   ICE keepalive interval (default 500ms).
//	log         pion log level on stderr: disabled|error|warn|info|debug|trace
//	            (default error). Nothing is ever written to stdout.
//
// Listener.Close stops signalling, closes every peer connection (SCTP ABORT and
// DTLS close_notify, so clients learn it at once) and waits up to 2 s for their
// Disconnected callbacks. A peer that vanishes silently is noticed by the ICE
// timeouts (options disconnect, failed, keepalive).
//
// LibRTT is the SCTP association's smoothed RTT (RFC 4960 SRTT, via
// SCTPTransport.Stats), false until the first DATA chunk was acknowledged. SCTP
// times DATA against its SACK, and pion delays the SACK of a lone packet until the
// next packet or its 200 ms ack timer, so with paced game traffic SRTT measures
// mostly the ack delay: ~18 ms on loopback at 60 Hz x 100 B while the echo RTT is
// well under 1 ms. pion's SCTP association (and its ActiveHeartbeat probe) is not
// reachable through the webrtc API, so this cannot be corrected here.
package webrtc

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/logging"
	pion "github.com/pion/webrtc/v4"

	"netstick/prototypes/reference/internal/transport"
)

const name = "webrtc"

// Data-channel stream ids; both sides create the channels with these ids
// (Negotiated), which saves the DCEP OPEN/ACK round trip.
const (
	reliableID   uint16 = 0
	unreliableID uint16 = 1
)

// openTimeout bounds how long the server keeps a peer whose offer it answered but
// whose channels never opened (a client that vanished mid-handshake).
const openTimeout = 10 * time.Second

// disconnectWait bounds how long Listener.Close waits for the Disconnected
// callbacks of the connections it closed.
const disconnectWait = 2 * time.Second

// maxOfferBytes bounds the offer body the server reads.
const maxOfferBytes = 64 << 10

func init() {
	transport.Register(name, func(opts transport.Options) (transport.Transport, error) {
		cfg, err := parseOptions(opts)
		if err != nil {
			return nil, err
		}
		return &Transport{cfg: cfg, logs: newLoggerFactory(cfg.logLevel)}, nil
	})
}

type config struct {
	// unrelOnReliable sends Unreliable messages on the reliable channel.
	unrelOnReliable bool
	iface           string
	sockbuf         int
	maxMsg          int
	iceDisconnected time.Duration
	iceFailed       time.Duration
	iceKeepalive    time.Duration
	logLevel        logging.LogLevel
}

var logLevels = map[string]logging.LogLevel{
	"disabled": logging.LogLevelDisabled,
	"error":    logging.LogLevelError,
	"warn":     logging.LogLevelWarn,
	"info":     logging.LogLevelInfo,
	"debug":    logging.LogLevelDebug,
	"trace":    logging.LogLevelTrace,
}

func parseOptions(opts transport.Options) (config, error) {
	cfg := config{
		sockbuf:         4 << 20,
		maxMsg:          256 << 10,
		iceDisconnected: 2 * time.Second,
		iceFailed:       4 * time.Second,
		iceKeepalive:    500 * time.Millisecond,
		logLevel:        logging.LogLevelError,
	}
	if err := transport.CheckOptions(name, opts,
		"unreliable", "iface", "sockbuf", "maxmsg", "disconnect", "failed", "keepalive", "log"); err != nil {
		return cfg, err
	}
	bad := func(key, why string) error {
		return fmt.Errorf("%s option %s=%q: %s", name, key, opts[key], why)
	}
	if v, ok := opts["unreliable"]; ok {
		switch v {
		case "unreliable":
		case "reliable":
			cfg.unrelOnReliable = true
		default:
			return cfg, bad("unreliable", "expected unreliable or reliable")
		}
	}
	cfg.iface = opts["iface"]
	for key, dst := range map[string]*int{"sockbuf": &cfg.sockbuf, "maxmsg": &cfg.maxMsg} {
		if v, ok := opts[key]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 || n > 1<<30 {
				return cfg, bad(key, "expected a byte count between 1 and 1073741824")
			}
			*dst = n
		}
	}
	for key, dst := range map[string]*time.Duration{
		"disconnect": &cfg.iceDisconnected, "failed": &cfg.iceFailed, "keepalive": &cfg.iceKeepalive,
	} {
		if v, ok := opts[key]; ok {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return cfg, bad(key, "expected a positive duration such as 2s")
			}
			*dst = d
		}
	}
	if v, ok := opts["log"]; ok {
		lvl, ok := logLevels[v]
		if !ok {
			return cfg, bad("log", "expected disabled, error, warn, info, debug or trace")
		}
		cfg.logLevel = lvl
	}
	return cfg, nil
}

// newLoggerFactory builds pion's loggers explicitly (not NewDefaultLoggerFactory) so
// PION_LOG_* variables cannot raise the level and output always goes to stderr:
// stdout carries the prototype's readiness line.
func newLoggerFactory(lvl logging.LogLevel) logging.LoggerFactory {
	return &logging.DefaultLoggerFactory{Writer: os.Stderr, DefaultLogLevel: lvl}
}

// Transport is the webrtc transport.
type Transport struct {
	cfg  config
	logs logging.LoggerFactory

	certOnce sync.Once
	cert     pion.Certificate
	certErr  error
}

// Settings implements transport.Settings (prototype.yaml, transports webrtc settings), as
// settingEngine and the data channels set them.
func (t *Transport) Settings() map[string]string {
	c := t.cfg
	iface := c.iface
	if iface == "" {
		iface = "derived from the local address"
	}
	return map[string]string{
		"disconnect": c.iceDisconnected.String(), "failed": c.iceFailed.String(),
		"keepalive": c.iceKeepalive.String(), "maxmsg": strconv.Itoa(c.maxMsg),
		"sockbuf": strconv.Itoa(c.sockbuf), "iface": iface,
		"ice_udp_mux":                "server: one UDP socket shared by every peer",
		"network_types":              "udp4",
		"mdns_mode":                  "disabled",
		"include_loopback_candidate": "true",
		"detach_data_channels":       "true",
		"data_channels_negotiated":   "true",
		"unreliable_channel":         "ordered=false, maxRetransmits=0",
		"certificate":                "one per process",
	}
}

// Name implements transport.Transport.
func (t *Transport) Name() string { return name }

// Caps implements transport.Transport. Both channels are native unless
// unreliable=reliable; SCTP fragments large messages on both.
func (t *Transport) Caps() transport.Caps {
	return transport.Caps{
		NativeReliable:     true,
		NativeUnreliable:   !t.cfg.unrelOnReliable,
		MaxReliableBytes:   t.cfg.maxMsg,
		MaxUnreliableBytes: t.cfg.maxMsg,
	}
}

// certificate returns one DTLS certificate shared by every PeerConnection of this
// transport: generating and self-signing a key per peer is wasted work when 200
// players connect at once.
func (t *Transport) certificate() (pion.Certificate, error) {
	t.certOnce.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.certErr = fmt.Errorf("webrtc certificate key: %w", err)
			return
		}
		c, err := pion.GenerateCertificate(key)
		if err != nil {
			t.certErr = fmt.Errorf("webrtc certificate: %w", err)
			return
		}
		t.cert = *c
	})
	return t.cert, t.certErr
}

// newAPI builds a pion API with the settings both sides share. ipFilter and
// ifaceFilter may be nil (no restriction); mux is the server's shared socket.
func (t *Transport) newAPI(ifaceFilter func(string) bool, ipFilter func(net.IP) bool, mux ice.UDPMux) *pion.API {
	var se pion.SettingEngine
	se.LoggerFactory = t.logs
	// Detached channels let us read with one reusable buffer per channel instead of
	// pion's read loop, which copies every message into a fresh slice.
	se.DetachDataChannels()
	se.SetNetworkTypes([]pion.NetworkType{pion.NetworkTypeUDP4})
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetIncludeLoopbackCandidate(true)
	se.SetICETimeouts(t.cfg.iceDisconnected, t.cfg.iceFailed, t.cfg.iceKeepalive)
	se.SetSCTPMaxMessageSize(uint32(t.cfg.maxMsg))
	if ifaceFilter != nil {
		se.SetInterfaceFilter(ifaceFilter)
	}
	if ipFilter != nil {
		se.SetIPFilter(ipFilter)
	}
	if mux != nil {
		se.SetICEUDPMux(mux)
	}
	// No MediaEngine codecs or interceptors: data channels only.
	return pion.NewAPI(pion.WithSettingEngine(se))
}

// filters returns the candidate filters for a local address: the iface option if
// set, otherwise the interfaces owning ip and only ip itself. An unspecified ip
// means no restriction; an ip no interface carries exactly (127.0.0.2 on lo's
// 127.0.0.1/8) restricts to the interfaces whose subnet holds it.
func (t *Transport) filters(ip net.IP) (func(string) bool, func(net.IP) bool, error) {
	if t.cfg.iface != "" {
		want := t.cfg.iface
		return func(s string) bool { return s == want }, nil, nil
	}
	if ip == nil || ip.IsUnspecified() {
		return nil, nil, nil
	}
	exact, subnet, err := interfacesWith(ip)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case len(exact) > 0:
		keepIP := ip.To4()
		return func(s string) bool { return exact[s] }, func(c net.IP) bool { return c.Equal(keepIP) }, nil
	case len(subnet) > 0:
		return func(s string) bool { return subnet[s] }, nil, nil
	}
	return nil, nil, fmt.Errorf("no interface has address %s", ip)
}

// interfacesWith names the interfaces that carry ip exactly and those whose
// subnet contains it.
func interfacesWith(ip net.IP) (exact, subnet map[string]bool, err error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, nil, fmt.Errorf("list interfaces: %w", err)
	}
	exact, subnet = map[string]bool{}, map[string]bool{}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			if n.IP.Equal(ip) {
				exact[ifc.Name] = true
			}
			if n.Contains(ip) {
				subnet[ifc.Name] = true
			}
		}
	}
	return exact, subnet, nil
}

// newDataChannels creates the two pre-negotiated channels on pc.
func newDataChannels(pc *pion.PeerConnection) (rel, unrel *pion.DataChannel, err error) {
	yes, no := true, false
	relID, unrelID := reliableID, unreliableID
	var zero uint16
	rel, err = pc.CreateDataChannel("reliable", &pion.DataChannelInit{Negotiated: &yes, ID: &relID})
	if err != nil {
		return nil, nil, fmt.Errorf("create reliable channel: %w", err)
	}
	unrel, err = pc.CreateDataChannel("unreliable", &pion.DataChannelInit{
		Negotiated: &yes, ID: &unrelID, Ordered: &no, MaxRetransmits: &zero})
	if err != nil {
		return nil, nil, fmt.Errorf("create unreliable channel: %w", err)
	}
	return rel, unrel, nil
}
