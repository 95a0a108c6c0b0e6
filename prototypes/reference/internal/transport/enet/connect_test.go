//go:build linux && cgo

package enet

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/transport/transporttest"
)

// oneWay is the turbulent profile's mean one-way delay (13.742 ms).
const oneWay = 14 * time.Millisecond

func connectResult(t *testing.T, res transporttest.ConnectResult) {
	t.Helper()
	t.Logf("%d of %d players failed; slowest connect+echo %v; %d of %d datagrams on the way up dropped",
		res.Failed, res.Players, res.Slowest.Round(time.Millisecond), res.UpLost, res.UpIn)
	for _, err := range res.Errors {
		t.Error(err)
	}
}

// One connect attempt sends ENet's connect command at 0 and 0.5 s and gives up when
// timeout_ms (here 1000) has passed at the next retransmission, 1.5 s. With every
// datagram on the way up lost for 1.7 s, that attempt fails; Dial makes a new one,
// whose second send gets through, within the 5 s budget.
func TestDialRetriesUntilTheBudgetEnds(t *testing.T) {
	tr := newT(t, transport.Options{"timeout_ms": "1000"})
	res := transporttest.ConnectThroughLoss(t, tr, 4, transporttest.Blackout(1700*time.Millisecond), oneWay, 5*time.Second)
	connectResult(t, res)
	if res.Failed == 0 && res.Slowest < 1700*time.Millisecond {
		t.Errorf("connected after %v, before the blackout ended", res.Slowest)
	}
}

// The connect command gets through, then every datagram on the way up is lost for 1 s,
// longer than timeout_ms (1000): the acknowledgement of the server's verify-connect and
// the sends of the player's first message. The connection used to end at ENet's first
// retransmission timer after timeout_ms; it now has the dial's connect budget (5 s)
// until that message is acknowledged.
func TestFirstMessageOutlastsTimeoutWithinTheBudget(t *testing.T) {
	tr := newT(t, transport.Options{"timeout_ms": "1000"})
	res := transporttest.ConnectThroughLoss(t, tr, 4, transporttest.BlackoutAfterFirst(time.Second), oneWay, 5*time.Second)
	connectResult(t, res)
}

// A dial to a port nobody answers makes attempts until its budget is over and says
// how many; each attempt is one send here (timeout_ms 500 is reached at ENet's first
// retransmission timer, 0.5 s).
func TestDialGivesUpAtTheBudgetEnd(t *testing.T) {
	tr := newT(t, transport.Options{"timeout_ms": "500"})
	ctx, cancel := context.WithTimeout(t.Context(), 1800*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := tr.Dial(ctx, transporttest.FreeAddr(t), &transporttest.Recorder{})
	took := time.Since(start)
	if !errors.Is(err, transport.ErrConnect) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial to a silent port: %v", err)
	}
	m := regexp.MustCompile(`no answer from the server in (\d+) attempts of up to 500 ms`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("error %q does not count the attempts", err)
	}
	if n, _ := strconv.Atoi(m[1]); n < 3 {
		t.Fatalf("error %q: %d attempts in 1.8 s of 0.5 s each, want at least 3", err, n)
	}
	if took < 1800*time.Millisecond || took > 3*time.Second {
		t.Fatalf("gave up after %v with a budget of 1.8 s", took)
	}
}

// Each player's first datagram after the connect (it carries the acknowledgement of
// the server's verify-connect) is lost. The server must not wait for its own timer to
// resend the verify-connect (0.5 s): the player's next datagram shows the
// acknowledgement was lost, and the server resends at once (ns_hurry_verify), so the
// first message is through within a few round trips.
func TestLostVerifyAckIsResentAtOnce(t *testing.T) {
	tr := newT(t, nil)
	res := transporttest.ConnectThroughLoss(t, tr, 4, transporttest.DropSeq(1), oneWay, 5*time.Second)
	connectResult(t, res)
	if res.Slowest >= 450*time.Millisecond {
		t.Errorf("slowest connect+echo %v: the server waited for its own timer", res.Slowest)
	}
}

// At the connect event ENet's round-trip estimate is the handshake's (28 ms through the
// relay), not ENet's default of 500 ms, before any acknowledgement: the first messages'
// retransmission timer starts from it (ns_seed_rtt).
func TestConnectSeedsTheRoundTrip(t *testing.T) {
	tr := newT(t, nil)
	_, addr := transporttest.Listen(t, tr, &transporttest.Recorder{Echo: true})
	relay := transporttest.NewRelay(t, addr, func(int, int, time.Duration) bool { return false }, oneWay)
	c := transporttest.Dial(t, tr, relay.Addr, &transporttest.Recorder{})
	rtt, ok := c.(transport.RTTEstimator).LibRTT()
	if !ok || rtt < 2*oneWay || rtt > 2*oneWay+50*time.Millisecond {
		t.Fatalf("round-trip estimate %v (ok %v) right after the connect, want the handshake's, about %v", rtt, ok, 2*oneWay)
	}
}

// A dial without a deadline still gives up after one attempt of timeout_ms.
func TestDialWithoutDeadlineIsOneAttempt(t *testing.T) {
	tr := newT(t, transport.Options{"timeout_ms": "300"})
	start := time.Now()
	_, err := tr.Dial(t.Context(), transporttest.FreeAddr(t), &transporttest.Recorder{})
	if err == nil || !strings.Contains(err.Error(), "no answer from the server within 300 ms") {
		t.Fatalf("dial to a silent port: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("took %v", took)
	}
}

// The turbulent profile's up direction: 10 % loss with 25 % correlation (one chain for
// all players, as in the emulator), 14 ms each way, 100 players connecting at once with
// the contract's default budget of 10 s. Measured over 10 such runs: before, 13 of 1000
// players failed (connect attempts or connections timed out after 3000 ms); now none.
// At 25 % loss: 89 of 1000 before, 2 of 1800 now.
func TestConnectsThroughTurbulentUpLoss(t *testing.T) {
	tr := newT(t, nil)
	res := transporttest.ConnectThroughLoss(t, tr, 100, transporttest.CorrelatedLoss(0.10, 0.25, 1), oneWay, 10*time.Second)
	connectResult(t, res)
}
