package transporttest

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"netstick/prototypes/reference/internal/transport"
)

// Recorder is the one test Handler of the transport tests: it counts every callback,
// keeps a copy of every message per channel and hands out the connections and the
// disconnect reasons it was told of, so that a test can wait for what a transport
// reports from its own goroutines and then check it. With Echo it is a game server
// in miniature. The zero value is ready; it is safe for concurrent use.
type Recorder struct {
	// Echo sends every message back on the channel it came on.
	Echo bool
	// OnReceive, if set, is called first with every message, on the transport's
	// goroutine: for tests that act inside the callback (close, block, time it).
	OnReceive func(c transport.Conn, ch transport.Channel, msg []byte)

	connected, disconnected, received, unpaired atomic.Int64

	once    sync.Once
	conns   chan transport.Conn
	reasons chan error

	mu     sync.Mutex
	msgs   map[transport.Channel][][]byte
	lastCh transport.Channel
	last   []byte
}

// kept is how many connections and disconnect reasons Conns and Reasons hold; later
// ones are only counted, so that a callback never blocks the transport that calls it.
const kept = 256

func (r *Recorder) init() {
	r.once.Do(func() {
		r.conns = make(chan transport.Conn, kept)
		r.reasons = make(chan error, kept)
		r.msgs = map[transport.Channel][][]byte{}
	})
}

// Connected implements transport.Handler.
func (r *Recorder) Connected(c transport.Conn) {
	r.init()
	select {
	case r.conns <- c:
	default:
	}
	r.connected.Add(1) // after the send: once counted, the connection can be received
}

// Received implements transport.Handler.
func (r *Recorder) Received(c transport.Conn, ch transport.Channel, msg []byte) {
	if r.OnReceive != nil {
		r.OnReceive(c, ch, msg)
	}
	r.init()
	m := bytes.Clone(msg) // msg is only valid during the call
	r.mu.Lock()
	r.msgs[ch] = append(r.msgs[ch], m)
	r.lastCh, r.last = ch, m
	r.mu.Unlock()
	r.received.Add(1)
	if r.Echo {
		_ = c.Send(ch, msg)
	}
}

// Disconnected implements transport.Handler.
func (r *Recorder) Disconnected(_ transport.Conn, err error) {
	r.init()
	select {
	case r.reasons <- err:
	default:
	}
	// The contract: once per connection, after its Connected.
	if r.disconnected.Add(1) > r.connected.Load() {
		r.unpaired.Add(1)
	}
}

// NumConnected is the number of Connected calls so far.
func (r *Recorder) NumConnected() int { return int(r.connected.Load()) }

// NumDisconnected is the number of Disconnected calls so far.
func (r *Recorder) NumDisconnected() int { return int(r.disconnected.Load()) }

// NumReceived is the number of messages received so far, on both channels.
func (r *Recorder) NumReceived() int { return int(r.received.Load()) }

// Unpaired is the number of Disconnected calls that outnumbered the Connected calls
// before them: each one breaks the Handler contract.
func (r *Recorder) Unpaired() int { return int(r.unpaired.Load()) }

// Conns yields the connections in the order Connected reported them.
func (r *Recorder) Conns() <-chan transport.Conn {
	r.init()
	return r.conns
}

// Reasons yields the disconnect reasons in the order Disconnected reported them (nil
// for a local Close).
func (r *Recorder) Reasons() <-chan error {
	r.init()
	return r.reasons
}

// NextReason waits up to d for the next reason Reasons yields and returns it; the test
// fails if none comes. what says whose Disconnected is awaited.
func (r *Recorder) NextReason(t testing.TB, what string, d time.Duration) error {
	t.Helper()
	select {
	case err := <-r.Reasons():
		return err
	case <-time.After(d):
		t.Fatalf("no Disconnected within %v: %s", d, what)
		return nil
	}
}

// Count is the number of messages received on ch.
func (r *Recorder) Count(ch transport.Channel) int {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs[ch])
}

// Messages returns the messages received on ch, in order.
func (r *Recorder) Messages(ch transport.Channel) [][]byte {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.msgs[ch]...)
}

// Last returns the last message received on either channel and its channel.
func (r *Recorder) Last() (transport.Channel, []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastCh, r.last
}
