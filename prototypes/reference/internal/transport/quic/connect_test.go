package quic

import (
	"testing"
	"time"

	"netstick/prototypes/reference/internal/transport/transporttest"
)

// Every datagram on the way up is lost for the first 5.5 s: longer than quic-go's default
// handshake idle timeout (5 s), within the 10 s connect budget. The handshake must take
// the budget: it used to end at 5 s with "no recent network activity".
func TestHandshakeTakesTheDialBudget(t *testing.T) {
	res := transporttest.ConnectThroughLoss(t, mk(t, nil), 2, transporttest.Blackout(5500*time.Millisecond),
		14*time.Millisecond, 10*time.Second)
	for _, err := range res.Errors {
		t.Error(err)
	}
	t.Logf("slowest connect+echo %v", res.Slowest.Round(time.Millisecond))
}
