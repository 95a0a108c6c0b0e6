// Package transport defines the one interface every reference transport implements.
//
// A transport moves whole messages between a server and many players. It offers two
// channels: Reliable (ordered, delivered) and Unreliable (best effort). A transport
// that has no native unreliable mode (tcp, ws, kcp) carries Unreliable messages on its
// reliable path; udp, which has no reliability, carries Reliable messages best effort.
// Caps tells which channels are native, so logs can record the effective channel.
package transport

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Channel selects the delivery guarantee of one message.
type Channel uint8

const (
	// Reliable messages arrive once, in order (where the transport can do it).
	Reliable Channel = 0
	// Unreliable messages may be lost or reordered; they never wait for retransmissions.
	Unreliable Channel = 1
)

func (c Channel) String() string {
	switch c {
	case Reliable:
		return "reliable"
	case Unreliable:
		return "unreliable"
	}
	return fmt.Sprintf("channel(%d)", uint8(c))
}

// ErrTooLarge is returned by Send when a message exceeds what the transport can carry.
var ErrTooLarge = errors.New("message too large for transport")

// ErrClosed is returned by Send after the connection was closed by either side.
var ErrClosed = errors.New("connection closed")

// Handler receives the events of connections. The transport calls it from its own
// goroutines, possibly concurrently for different connections, but never concurrently
// for the same connection. msg is only valid during the call.
type Handler interface {
	Connected(c Conn)
	Received(c Conn, ch Channel, msg []byte)
	// Disconnected is called once per connection that was reported Connected, with the
	// reason (nil for a local Close).
	Disconnected(c Conn, err error)
}

// Conn is one connection between the server and one player. Send is safe for
// concurrent use and must not keep msg after it returns.
type Conn interface {
	Send(ch Channel, msg []byte) error
	Close() error
	RemoteAddr() string
}

// RTTEstimator is implemented by connections whose library keeps its own round-trip
// estimate (kcp, quic, enet, webrtc/SCTP). It is logged as RTT kind "lib".
type RTTEstimator interface {
	LibRTT() (time.Duration, bool)
}

// Poller is implemented by a transport whose client connections the caller's own thread
// can read: the client's dispatcher then waits in Wait instead of sleeping, so one wake-up
// of one thread serves the sends that are due and the messages that arrived.
type Poller interface {
	// Drive hands the receive path of every connection the transport dialled to the
	// caller (on: from its return, callbacks run only inside Wait) or back (off).
	Drive(on bool)
	// Wait delivers what arrives until deadlineNs (CLOCK_MONOTONIC, ns; nowNs is the
	// time now) at the latest, and may return earlier.
	Wait(deadlineNs, nowNs int64)
}

// Settings is implemented by every transport: each setting it makes that differs from its
// library's own default, name -> the value in force after its options. The process records
// it as transport_settings in its meta.json (CONTRACT.md 3.1); the manifest's
// transports.settings lists the same names with the library's own defaults.
type Settings interface {
	Settings() map[string]string
}

// Listener is a bound server endpoint. Close stops accepting and closes every
// connection it accepted.
type Listener interface {
	Addr() string
	Close() error
}

// Caps says which channels a transport carries natively and the largest message.
type Caps struct {
	NativeReliable   bool
	NativeUnreliable bool
	// MaxMessageBytes is the largest message Send accepts on each channel.
	MaxReliableBytes   int
	MaxUnreliableBytes int
}

// Transport creates listeners and connections. Options come from -param t.key=value.
type Transport interface {
	Name() string
	Caps() Caps
	// Listen binds addr (host:port) and reports connections to h. A bind failure
	// must wrap ErrBind so the caller can exit with the bind-failure code.
	Listen(addr string, h Handler) (Listener, error)
	// Dial connects to addr and returns once the connection is usable; h.Connected is
	// called before Dial returns. A failure wraps ErrConnect.
	Dial(ctx context.Context, addr string, h Handler) (Conn, error)
}

// ErrBind marks a failure to bind the server address.
var ErrBind = errors.New("bind failed")

// ErrConnect marks a failure to connect to the server.
var ErrConnect = errors.New("connect failed")

// Options are transport settings given as -param transport.key=value.
type Options map[string]string

// Factory builds a transport from its options; it rejects unknown keys by name.
type Factory func(opts Options) (Transport, error)

var (
	mu       sync.Mutex
	registry = map[string]Factory{}
)

// Register adds a transport under name; called from the transport's init.
func Register(name string, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[name]; dup {
		panic("transport registered twice: " + name)
	}
	registry[name] = f
}

// Names lists the registered transports in sorted order.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New builds the named transport.
func New(name string, opts Options) (Transport, error) {
	mu.Lock()
	f, ok := registry[name]
	mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown transport %q (expected one of %v)", name, Names())
	}
	return f(opts)
}

// CheckOptions returns an error naming the first option key not in known.
func CheckOptions(transport string, opts Options, known ...string) error {
	for k := range opts {
		found := false
		for _, kk := range known {
			if k == kk {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("unknown option %q for transport %s (expected one of %v)", k, transport, known)
		}
	}
	return nil
}
