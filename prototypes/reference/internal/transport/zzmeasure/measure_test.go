package zzmeasure

import (
	"os"
	"strconv"
	"testing"
	"time"

	"netstick/prototypes/reference/internal/transport"
	_ "netstick/prototypes/reference/internal/transport/all"
	"netstick/prototypes/reference/internal/transport/transporttest"
)

func TestMeasure(t *testing.T) {
	p, _ := strconv.ParseFloat(os.Getenv("P"), 64)
	c, _ := strconv.ParseFloat(os.Getenv("C"), 64)
	n, _ := strconv.Atoi(os.Getenv("N"))
	reps, _ := strconv.Atoi(os.Getenv("REPS"))
	budget := 10 * time.Second
	if b := os.Getenv("BUDGET"); b != "" {
		budget, _ = time.ParseDuration(b)
	}
	total, failed := 0, 0
	for r := range reps {
		tr, err := transport.New(os.Getenv("T"), transport.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var drop transporttest.Drop
		switch os.Getenv("MODE") {
		case "blackout":
			drop = transporttest.Blackout(time.Duration(p * float64(time.Second)))
		case "after":
			drop = transporttest.BlackoutAfterFirst(time.Duration(p * float64(time.Second)))
		default:
			drop = transporttest.CorrelatedLoss(p, c, uint64(r+1))
		}
		res := transporttest.ConnectThroughLoss(t, tr, n, drop, 14*time.Millisecond, budget)
		total += res.Players
		failed += res.Failed
		t.Logf("rep %d: failed %d/%d slowest %v up lost %d/%d took %v", r, res.Failed, res.Players, res.Slowest, res.UpLost, res.UpIn, res.Duration)
		for i, e := range res.Errors {
			if i < 5 {
				t.Logf("  %v", e)
			}
		}
	}
	t.Logf("TOTAL %s failed %d/%d = %.4f", os.Getenv("T"), failed, total, float64(failed)/float64(total))
}
