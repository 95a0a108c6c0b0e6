package server

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"netstick/prototypes/reference/internal/config"
	"netstick/prototypes/reference/internal/logs"
	"netstick/prototypes/reference/internal/sched"
	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/wire"
)

type fakeTransport struct{}

func (fakeTransport) Name() string { return "fake" }
func (fakeTransport) Caps() transport.Caps {
	return transport.Caps{NativeReliable: true, NativeUnreliable: true, MaxReliableBytes: 1 << 20, MaxUnreliableBytes: 1200}
}
func (fakeTransport) Listen(string, transport.Handler) (transport.Listener, error) { return nil, nil }
func (fakeTransport) Dial(context.Context, string, transport.Handler) (transport.Conn, error) {
	return nil, nil
}

// fakeConn records what the server sends to one player.
type fakeConn struct {
	mu   sync.Mutex
	sent [][]byte
}

func (c *fakeConn) Send(_ transport.Channel, msg []byte) error {
	c.mu.Lock()
	c.sent = append(c.sent, append([]byte(nil), msg...))
	c.mu.Unlock()
	return nil
}
func (c *fakeConn) Close() error       { return nil }
func (c *fakeConn) RemoteAddr() string { return "fake:1" }

func newTestServer(t testing.TB, workload string, params ...string) *Server {
	t.Helper()
	args := []string{"-role", "server", "-log-dir", t.TempDir(), "-workload", workload}
	for _, p := range params {
		args = append(args, "-param", p)
	}
	cfg, err := config.Parse(args, "tcp", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ev, err := logs.Create(filepath.Join(dir, "e.csv"), "h")
	if err != nil {
		t.Fatal(err)
	}
	ticks, err := logs.Create(filepath.Join(dir, "t.csv"), "h")
	if err != nil {
		t.Fatal(err)
	}
	return New(cfg, fakeTransport{}, Logs{Events: ev, Ticks: ticks})
}

func TestJoinSendsWelcomeAndSnapshot(t *testing.T) {
	s := newTestServer(t, "world", "objects=5000")
	c := &fakeConn{}
	s.Connected(c)
	s.Received(c, transport.Reliable, wire.AppendHello(nil, wire.Hello{Player: 3, Schema: wire.SchemaVersion}))
	w, err := wire.DecodeWelcome(c.sent[0])
	if err != nil || w.Player != 3 || w.WorldBlocks != 5000 || int(w.WorldChunks) != len(c.sent)-1 {
		t.Fatalf("welcome %+v %v, %d messages", w, err, len(c.sent))
	}
}

func TestNetProbeEchoedAtOnceAppProbeAtTick(t *testing.T) {
	s := newTestServer(t, "idle")
	c := &fakeConn{}
	s.Connected(c)
	s.Received(c, transport.Reliable, wire.AppendHello(nil, wire.Hello{Player: 1, Schema: wire.SchemaVersion}))
	before := len(c.sent)
	s.Received(c, transport.Unreliable, wire.AppendProbe(nil, wire.TProbe, wire.Probe{Kind: wire.ProbeNet, Player: 1, Seq: 5}, 40))
	s.Received(c, transport.Unreliable, wire.AppendProbe(nil, wire.TProbe, wire.Probe{Kind: wire.ProbeApp, Player: 1, Seq: 6}, 0))
	if len(c.sent) != before+1 || wire.Type(c.sent[before][0]) != wire.TProbeEcho || len(c.sent[before]) != 40 {
		t.Fatalf("net probe not echoed at once with its padding")
	}
	var st tickState
	s.tick(1, 1e12, 16_666_667, &st)
	last := c.sent[len(c.sent)-1]
	p, err := wire.DecodeProbe(last)
	if err != nil || p.Seq != 6 || p.Kind != wire.ProbeApp {
		t.Fatalf("app probe not echoed by the tick: %+v %v", p, err)
	}
}

func TestBlockActionsAckedAndBroadcast(t *testing.T) {
	s := newTestServer(t, "idle")
	a, b := &fakeConn{}, &fakeConn{}
	for i, c := range []*fakeConn{a, b} {
		s.Connected(c)
		s.Received(c, transport.Reliable, wire.AppendHello(nil, wire.Hello{Player: uint32(i), Schema: wire.SchemaVersion}))
	}
	pos := wire.BlockPos{X: 1, Y: 2, Z: 3}
	s.Received(a, transport.Reliable, wire.AppendBlockAction(nil, wire.BlockAction{Action: 1, Op: wire.OpPlace, Pos: pos, Kind: 2}))
	s.Received(a, transport.Reliable, wire.AppendBlockAction(nil, wire.BlockAction{Action: 2, Op: wire.OpPlace, Pos: pos, Kind: 2}))
	var st tickState
	s.tick(1, 1e12, 16_666_667, &st)
	var acks []wire.BlockAck
	for _, m := range a.sent {
		if wire.Type(m[0]) == wire.TBlockAck {
			ack, _ := wire.DecodeBlockAck(m)
			acks = append(acks, ack)
		}
	}
	if len(acks) != 2 || !acks[0].OK || acks[1].OK {
		t.Fatalf("acks %+v: want the first place applied and the second refused", acks)
	}
	got := b.sent[len(b.sent)-1]
	_, changes, err := wire.DecodeBlockChanges(got, nil)
	if err != nil || len(changes) != 1 || changes[0].Pos != pos {
		t.Fatalf("other player did not get the block change: %v %v", changes, err)
	}
}

func TestEnvmodAcceleratesAndPlacesBlocks(t *testing.T) {
	s := newTestServer(t, "envmod", "blocks=10", "interval=0.1", "interval_change=0.05")
	c := &fakeConn{}
	s.Connected(c)
	s.Received(c, transport.Reliable, wire.AppendHello(nil, wire.Hello{Player: 0, Schema: wire.SchemaVersion}))
	var st tickState
	now := s.envNextNs
	for i := range 10 {
		s.tick(uint32(i), now, 16_666_667, &st)
		now = s.envNextNs
	}
	if s.world.Blocks() != 100 {
		t.Fatalf("%d blocks after 10 steps of 10", s.world.Blocks())
	}
	if s.envInterval < 16_666_667/1e9 || s.envInterval > 0.0167 {
		t.Fatalf("interval %v: must shrink to one tick and stop there", s.envInterval)
	}
}

// The geometry and timing CONTRACT.md §5 gives for envmod: step k fills layer y = 8 + k of a
// square of side n = ceil(sqrt(blocks)) centred on the origin, block i at (i mod n - n/2,
// i div n - n/2), type 1 + k mod 8; step 0 is due interval after the first join, step k
// interval - k*interval_change after step k-1.
func TestEnvmodGeometryAndTimingAreTheContracts(t *testing.T) {
	s := newTestServer(t, "envmod", "blocks=10", "interval=0.5", "interval_change=0.1")
	c := &fakeConn{}
	s.Connected(c)
	joined := sched.Now()
	s.Received(c, transport.Reliable, wire.AppendHello(nil, wire.Hello{Player: 0, Schema: wire.SchemaVersion}))
	if d := s.envNextNs - joined; d < 500_000_000 || d > 510_000_000 {
		t.Fatalf("step 0 due %d ns after the join, want interval = 0.5 s", d)
	}
	var st tickState
	due0 := s.envNextNs
	s.tick(1, due0-1, 16_666_667, &st)
	if s.world.Blocks() != 0 {
		t.Fatal("a step ran before it was due")
	}
	s.tick(2, due0, 16_666_667, &st)
	if s.envNextNs-due0 != 400_000_000 {
		t.Fatalf("step 1 due %d ns after step 0, want interval - interval_change = 0.4 s", s.envNextNs-due0)
	}
	s.tick(3, s.envNextNs, 16_666_667, &st)
	const n = 4 // ceil(sqrt(10))
	for k := range 2 {
		for i := range 10 {
			p := wire.BlockPos{X: int32(i%n - n/2), Y: int32(8 + k), Z: int32(i/n - n/2)}
			if got := s.world.Get(p); got != uint8(1+k%8) {
				t.Fatalf("step %d block %d at %+v has type %d, want %d", k, i, p, got, 1+k%8)
			}
		}
	}
	if s.world.Blocks() != 20 {
		t.Fatalf("%d blocks after 2 steps of 10", s.world.Blocks())
	}
}

// FuzzReceived: no message from a client, however malformed, may panic the server.
func FuzzReceived(f *testing.F) {
	f.Add(wire.AppendHello(nil, wire.Hello{Player: 1, Schema: 1}))
	f.Add(wire.AppendProbe(nil, wire.TProbe, wire.Probe{Kind: wire.ProbeApp}, 30))
	f.Add(wire.AppendBlockAction(nil, wire.BlockAction{Op: wire.OpRemove}))
	f.Add(wire.AppendInput(nil, wire.Input{}))
	f.Add([]byte{})
	s := newTestServer(f, "idle")
	c := &fakeConn{}
	s.Connected(c)
	s.Received(c, transport.Reliable, wire.AppendHello(nil, wire.Hello{Player: 9, Schema: wire.SchemaVersion}))
	var st tickState
	f.Fuzz(func(t *testing.T, b []byte) {
		s.Received(c, transport.Unreliable, b)
		s.tick(1, 1e12, 16_666_667, &st)
		c.mu.Lock()
		c.sent = c.sent[:0]
		c.mu.Unlock()
	})
}

func TestSanitize(t *testing.T) {
	if got := logs.Sanitize("a, b\nc"); strings.ContainsAny(got, ", \n") {
		t.Fatalf("sanitize left separators: %q", got)
	}
}
