package client

import (
	"io"
	"os"
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
	p.sendProbe(wire.ProbeNet, transport.Unreliable, 64, 1500)
	p.sendProbe(wire.ProbeNet, transport.Unreliable, 64, 2500)
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
	p.pingpongLeft = 1
	p.sendProbe(wire.ProbeNet, transport.Reliable, 100, -1)
	p.Received(conn, transport.Reliable, echoOf(conn.sent[0]))
	if len(conn.sent) != 2 {
		t.Fatalf("%d sends, want the first and one more", len(conn.sent))
	}
	p.Received(conn, transport.Reliable, echoOf(conn.sent[1]))
	if len(conn.sent) != 2 {
		t.Fatal("pingpong sent more than count probes")
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
