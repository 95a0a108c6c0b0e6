package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"netstick/prototypes/reference/internal/config"
	"netstick/prototypes/reference/internal/logs"
	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/wire"
)

// silentTransport never connects: each Dial waits for its context, like a dial whose
// every handshake datagram is lost, and records the budget it was given.
type silentTransport struct {
	mu      sync.Mutex
	budgets []time.Duration
}

func (*silentTransport) Name() string         { return "silent" }
func (*silentTransport) Caps() transport.Caps { return transport.Caps{} }
func (*silentTransport) Listen(string, transport.Handler) (transport.Listener, error) {
	return nil, errors.New("silent transport: no server side")
}

func (s *silentTransport) Dial(ctx context.Context, addr string, _ transport.Handler) (transport.Conn, error) {
	if d, ok := ctx.Deadline(); ok {
		s.mu.Lock()
		s.budgets = append(s.budgets, time.Until(d))
		s.mu.Unlock()
	}
	<-ctx.Done()
	return nil, fmt.Errorf("silent dial %s: %w: %w", addr, transport.ErrConnect, ctx.Err())
}

// A run lost to players that cannot connect says so on stderr in one line: the player,
// the transport, the connect budget (CONTRACT.md section 2, exit code 4), and how many
// players failed with it; every failed player has its connect_failed event; each Dial
// got the whole -connect-timeout-s as its deadline.
func TestConnectFailureNamesPlayerTransportAndTimeout(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse([]string{"-role", "client", "-log-dir", dir, "-players", "3",
		"-first-player", "7", "-connect-timeout-s", "0.2", "-connect-interval-ms", "0"}, "tcp", io.Discard)
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
	tr := &silentTransport{}
	var stdout bytes.Buffer
	c := New(cfg, tr, Logs{RTT: rtt, Events: ev}, &stdout)
	start := time.Now()
	err = c.Run(context.Background())
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Run took %v with a 0.2 s connect timeout", took)
	}
	if !errors.Is(err, ErrConnectFailed) {
		t.Fatalf("Run: %v, want ErrConnectFailed", err)
	}
	msg := err.Error()
	for _, want := range []string{"over silent", "within -connect-timeout-s 0.2", "(and 2 more of the 3 players)", "deadline exceeded"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if !strings.HasPrefix(msg, "player 7 ") && !strings.HasPrefix(msg, "player 8 ") && !strings.HasPrefix(msg, "player 9 ") {
		t.Errorf("error %q does not start with the player", msg)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q: no CONNECTED line may follow a connect failure", stdout.String())
	}
	if err := ev.Flush(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "events.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), ",connect_failed,"); n != 3 {
		t.Errorf("%d connect_failed events, want one per player:\n%s", n, data)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.budgets) != 3 {
		t.Fatalf("%d dials, want 3", len(tr.budgets))
	}
	for _, b := range tr.budgets {
		if b <= 150*time.Millisecond || b > 200*time.Millisecond {
			t.Errorf("a dial's budget was %v, want the whole -connect-timeout-s (200 ms)", b)
		}
	}
}

// slowServerTransport connects at once and answers the first hello with a welcome
// only after welcomeAfter, like a server reached over a lossy path; it counts hellos.
type slowServerTransport struct {
	reliable     bool
	welcomeAfter time.Duration
	conn         *fakeHelloConn
}

type fakeHelloConn struct {
	mu     sync.Mutex
	hellos int
	once   sync.Once
	answer func()
}

func (c *fakeHelloConn) Send(_ transport.Channel, msg []byte) error {
	if len(msg) > 0 && wire.Type(msg[0]) == wire.THello {
		c.mu.Lock()
		c.hellos++
		c.mu.Unlock()
		c.once.Do(c.answer)
	}
	return nil
}
func (c *fakeHelloConn) Close() error       { return nil }
func (c *fakeHelloConn) RemoteAddr() string { return "slow:1" }

func (s *slowServerTransport) Name() string { return "slow" }
func (s *slowServerTransport) Caps() transport.Caps {
	return transport.Caps{NativeReliable: s.reliable, NativeUnreliable: true}
}
func (*slowServerTransport) Listen(string, transport.Handler) (transport.Listener, error) {
	return nil, errors.New("slow transport: no server side")
}

func (s *slowServerTransport) Dial(_ context.Context, _ string, h transport.Handler) (transport.Conn, error) {
	c := &fakeHelloConn{}
	c.answer = func() {
		time.AfterFunc(s.welcomeAfter, func() {
			h.Received(c, transport.Reliable, wire.AppendWelcome(nil, wire.Welcome{Player: 0, TickRateHz: 60}))
		})
	}
	s.conn = c
	h.Connected(c)
	return c, nil
}

// The hello is repeated while the welcome is outstanding only on a transport that may
// lose it: a reliable transport retransmits it itself, and the server would answer every
// repeat it got with the welcome and the whole world again.
func TestHelloRepeatedOnlyWithoutReliability(t *testing.T) {
	for _, tc := range []struct {
		reliable             bool
		minHellos, maxHellos int
	}{{reliable: true, minHellos: 1, maxHellos: 1}, {reliable: false, minHellos: 3, maxHellos: 4}} {
		t.Run(fmt.Sprintf("reliable=%v", tc.reliable), func(t *testing.T) {
			dir := t.TempDir()
			cfg, err := config.Parse([]string{"-role", "client", "-log-dir", dir}, "tcp", io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := logs.Create(filepath.Join(dir, "events.csv"), "t_unix_ns,player,event,value,detail")
			if err != nil {
				t.Fatal(err)
			}
			tr := &slowServerTransport{reliable: tc.reliable, welcomeAfter: 3*helloRetry + helloRetry/2}
			var stdout bytes.Buffer
			c := New(cfg, tr, Logs{Events: ev}, &stdout)
			if err := c.connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(stdout.String(), "NETSTICK CONNECTED players=1 ") {
				t.Errorf("stdout %q", stdout.String())
			}
			tr.conn.mu.Lock()
			defer tr.conn.mu.Unlock()
			if n := tr.conn.hellos; n < tc.minHellos || n > tc.maxHellos {
				t.Errorf("%d hellos before the welcome came after %v, want %d..%d", n, tr.welcomeAfter, tc.minHellos, tc.maxHellos)
			}
		})
	}
}
