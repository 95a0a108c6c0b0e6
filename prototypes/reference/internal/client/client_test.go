package client

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"netstick/prototypes/reference/internal/config"
	"netstick/prototypes/reference/internal/logs"
	"netstick/prototypes/reference/internal/sched"
	"netstick/prototypes/reference/internal/server"
	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/wire"
)

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

func newTestPlayer(t testing.TB, workload string) (*Client, *player, *fakeConn, string) {
	t.Helper()
	dir := t.TempDir()
	cfg, err := config.Parse([]string{"-role", "client", "-log-dir", dir, "-workload", workload}, "tcp", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rtt, err := logs.Create(filepath.Join(dir, "rtt.csv"), "t_unix_ns,player,seq,rtt_us,kind,send_late_us")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := logs.Create(filepath.Join(dir, "events.csv"), "t_unix_ns,player,event,value,detail")
	if err != nil {
		t.Fatal(err)
	}
	c := New(cfg, nil, Logs{RTT: rtt, Events: ev}, io.Discard)
	p := newPlayer(c, 4)
	conn := &fakeConn{}
	p.conn = conn
	return c, p, conn, dir
}

func echoOf(msg []byte) []byte {
	e := append([]byte(nil), msg...)
	e[0] = byte(wire.TProbeEcho)
	return e
}

func TestProbeEchoLoggedOnceWithLateness(t *testing.T) {
	c, p, conn, dir := newTestPlayer(t, "idle")
	p.sendProbe(wire.ProbeNet, transport.Unreliable, 64, 1500, false)
	p.sendProbe(wire.ProbeNet, transport.Unreliable, 64, 2500, false)
	p.Received(conn, transport.Unreliable, echoOf(conn.sent[1]))
	p.Received(conn, transport.Unreliable, echoOf(conn.sent[1])) // a duplicate is ignored
	sent, echoed, lost, inflight := p.probeTotals(wire.ProbeNet, sched.Now())
	if sent != 2 || echoed != 1 || lost != 0 || inflight != 1 {
		t.Fatalf("totals sent %d echoed %d lost %d inflight %d", sent, echoed, lost, inflight)
	}
	_, _, lost, inflight = p.probeTotals(wire.ProbeNet, sched.Now()+probeTimeoutNs+1)
	if lost != 1 || inflight != 0 {
		t.Fatalf("after the timeout: lost %d inflight %d", lost, inflight)
	}
	if err := c.logs.RTT.Flush(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "rtt.csv"))
	rows := strings.Split(strings.TrimSpace(string(data)), "\n")[1:]
	if len(rows) != 1 || !strings.HasSuffix(rows[0], ",net,2.500") || !strings.Contains(rows[0], ",4,1,") {
		t.Fatalf("rtt rows %q", rows)
	}
}

func TestPingpongSendsNextOnEcho(t *testing.T) {
	_, p, conn, _ := newTestPlayer(t, "pingpong")
	p.ppLeft = 2
	p.sendPingpong(transport.Reliable, 100)
	p.Received(conn, transport.Reliable, echoOf(conn.sent[0]))
	if len(conn.sent) != 2 {
		t.Fatalf("%d sends, want the first and one more", len(conn.sent))
	}
	p.Received(conn, transport.Reliable, echoOf(conn.sent[1]))
	if len(conn.sent) != 2 {
		t.Fatal("pingpong sent more than count probes")
	}
}

// A pingpong echo lost on the unreliable channel costs one loss timeout, not the rest of the
// run (CONTRACT.md §5): the probe is given up and the next one sent; its late echo is logged but
// starts no second chain; after count probes the watch ends.
func TestPingpongGivesUpAnEchoAfterTheLossTimeout(t *testing.T) {
	c, p, conn, dir := newTestPlayer(t, "pingpong")
	p.ppLeft = 3
	task := &pingpongTask{p: p, ch: transport.Unreliable, size: 100}
	t0 := sched.Now()
	next, ok := task.Fire(t0, t0)
	if !ok || len(conn.sent) != 1 {
		t.Fatalf("first fire: ok %v, %d sends", ok, len(conn.sent))
	}
	if next, ok = task.Fire(next, p.ppSentMono+probeTimeoutNs-1); !ok || len(conn.sent) != 1 {
		t.Fatalf("gave up before the timeout: ok %v, %d sends", ok, len(conn.sent))
	}
	if next != p.ppSentMono+probeTimeoutNs {
		t.Fatalf("next look at %d, want the first probe's timeout %d", next, p.ppSentMono+probeTimeoutNs)
	}
	if _, ok = task.Fire(next, next); !ok || len(conn.sent) != 2 {
		t.Fatalf("after the timeout: ok %v, %d sends, want the next probe", ok, len(conn.sent))
	}
	p.Received(conn, transport.Unreliable, echoOf(conn.sent[0])) // late: logged, sends nothing
	if len(conn.sent) != 2 {
		t.Fatalf("a late echo sent probe %d", len(conn.sent))
	}
	p.Received(conn, transport.Unreliable, echoOf(conn.sent[1]))
	p.Received(conn, transport.Unreliable, echoOf(conn.sent[2]))
	if len(conn.sent) != 3 {
		t.Fatalf("%d sends, want count = 3", len(conn.sent))
	}
	if _, ok = task.Fire(next, sched.Now()); ok {
		t.Fatal("the watch goes on after the last echo")
	}
	sent, echoed, _, _ := p.probeTotals(wire.ProbeNet, sched.Now())
	if sent != 3 || echoed != 3 {
		t.Fatalf("sent %d echoed %d", sent, echoed)
	}
	if err := c.logs.RTT.Flush(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "rtt.csv"))
	if rows := strings.Split(strings.TrimSpace(string(data)), "\n")[1:]; len(rows) != 3 {
		t.Fatalf("rtt rows %q, want every echo logged", rows)
	}
}

// The geometry CONTRACT.md §4 and §5 give for active: player k spawns at (2(k mod 32) - 32, 0,
// 2 floor(k/32) - 32) and each action raises it 1 m and places a block in the cell its feet were
// in, so it builds a tower on its spawn point from y = 0 up.
func TestActiveBuildsATowerOnTheSpawnPoint(t *testing.T) {
	_, p, conn, _ := newTestPlayer(t, "active")
	p.pos = server.SpawnPoint(p.id)
	if p.pos != (wire.Vec3{X: 2*4 - 32, Y: 0, Z: -32}) {
		t.Fatalf("player 4 spawns at %+v", p.pos)
	}
	task := &activeTask{p: p, periodNs: 1e9, left: 2}
	task.Fire(0, 0)
	if _, more := task.Fire(1e9, 1e9); more {
		t.Fatal("active goes on after blocks placements")
	}
	var placed []wire.BlockPos
	var heights []float32
	for _, m := range conn.sent {
		switch wire.Type(m[0]) {
		case wire.TBlockAction:
			a, err := wire.DecodeBlockAction(m)
			if err != nil || a.Op != wire.OpPlace {
				t.Fatalf("action %+v %v", a, err)
			}
			placed = append(placed, a.Pos)
		case wire.TInput:
			in, _ := wire.DecodeInput(m)
			heights = append(heights, in.Pos.Y)
		}
	}
	want := []wire.BlockPos{{X: -24, Y: 0, Z: -32}, {X: -24, Y: 1, Z: -32}}
	if !slices.Equal(placed, want) || !slices.Equal(heights, []float32{1, 2}) {
		t.Fatalf("placed %+v with the player at heights %v, want %+v at 1, 2", placed, heights, want)
	}
}

// FuzzPlayerReceived: no message from a server, however malformed, may panic a player.
func FuzzPlayerReceived(f *testing.F) {
	f.Add(wire.AppendWelcome(nil, wire.Welcome{Player: 4, WorldChunks: 2}))
	f.Add(wire.AppendWorldChunk(nil, wire.WorldChunk{Seq: 0, Total: 2}))
	f.Add(wire.AppendProbe(nil, wire.TProbeEcho, wire.Probe{Player: 4, Seq: 0}, 0))
	f.Add(wire.AppendBlockAck(nil, wire.BlockAck{Action: 0, OK: true}))
	f.Add(wire.AppendKeepalive(nil, 3))
	_, p, conn, _ := newTestPlayer(f, "idle")
	f.Fuzz(func(t *testing.T, b []byte) {
		p.Received(conn, transport.Unreliable, b)
	})
}
