package plant

import (
	"math"
	"testing"
	"time"
)

// The calibration is sane: every trial measured, iterations per µs plausible for one core
// (a splitmix64 step takes a few ns), the median among the trials, and bounded in time.
func TestCalibrationIsSaneAndBounded(t *testing.T) {
	c, err := Calibrate(Trials, TrialDuration)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%.1f iterations per µs (trials %.1f), calibration %v", c.IterationsPerUs, c.TrialsPerUs, c.Took)
	if len(c.TrialsPerUs) != Trials {
		t.Fatalf("%d trials, want %d", len(c.TrialsPerUs), Trials)
	}
	if !(c.IterationsPerUs > 10 && c.IterationsPerUs < 10000) {
		t.Fatalf("%.1f iterations per µs: not a cheap hash on one core", c.IterationsPerUs)
	}
	below := 0
	for _, v := range c.TrialsPerUs {
		if v <= c.IterationsPerUs {
			below++
		}
	}
	if below < Trials/2 || below > Trials/2+1 {
		t.Fatalf("median %.1f of %v", c.IterationsPerUs, c.TrialsPerUs)
	}
	// Nominally 2*2 ms + 7*4 ms; a loaded machine may take longer, never seconds.
	if c.Took <= 0 || c.Took > 2*time.Second {
		t.Fatalf("calibration took %v", c.Took)
	}
}

// Nothing planted: no calibration, a nil plant whose work is one comparison, no allocation.
func TestZeroPlantsNothing(t *testing.T) {
	p, err := New(0)
	if err != nil || p != nil {
		t.Fatalf("New(0) = %+v, %v; want nil, nil", p, err)
	}
	if got := p.Meta(); len(got) != 1 || got["cpu_ns_per_msg"] != 0 {
		t.Fatalf("meta of nothing planted: %v", got)
	}
	if a := testing.AllocsPerRun(1000, func() { p.Work(7) }); a != 0 {
		t.Fatalf("%v allocations per message", a)
	}
	planted := WithCalibration(1000, Calibration{IterationsPerUs: 300})
	const msgs = 20000
	none := fastest(5, func() {
		for i := range msgs {
			p.Work(uint64(i))
		}
	})
	some := fastest(5, func() {
		for i := range msgs {
			planted.Work(uint64(i))
		}
	})
	if none*50 > some {
		t.Fatalf("%d messages: %v with nothing planted, %v with 1 µs each", msgs, none, some)
	}
}

// The iterations per message are proportional to the nanoseconds asked for, and so is the
// time they take (the fastest of several trials, to see the work and not the machine).
func TestWorkScalesLinearlyWithN(t *testing.T) {
	c := Calibration{IterationsPerUs: 250}
	for _, ns := range []float64{4, 100, 1000, 12345} {
		if got, want := WithCalibration(ns, c).IterationsPerMsg, int(math.Round(ns*0.25)); got != want {
			t.Fatalf("%v ns: %d iterations, want %d", ns, got, want)
		}
	}
	cal, err := Calibrate(3, TrialDuration)
	if err != nil {
		t.Fatal(err)
	}
	timed := func(ns float64) time.Duration {
		p := WithCalibration(ns, cal)
		return fastest(7, func() {
			for i := range 2000 {
				p.Work(uint64(i))
			}
		})
	}
	one, two, four := timed(2000), timed(4000), timed(8000)
	for _, r := range []float64{float64(two) / float64(one), float64(four) / float64(two)} {
		if r < 1.6 || r > 2.5 {
			t.Fatalf("doubling N: times %v, %v, %v (ratio %.2f, want about 2)", one, two, four, r)
		}
	}
	// 2000 messages of 2 µs each: about 4 ms at the calibrated speed.
	if want := 4 * time.Millisecond; one < want/2 || one > 2*want {
		t.Fatalf("2000 messages of 2 µs took %v, want about %v", one, want)
	}
}

// The work is deterministic: the same input gives the same hash, the salt never changes the
// number of iterations, and bad values are refused by name.
func TestDeterministicAndChecked(t *testing.T) {
	if Hash(1, 3) != Hash(1, 3) || Hash(1, 3) == Hash(1, 4) || Hash(0, 0) != 0 {
		t.Fatal("Hash is not a function of its input and iteration count")
	}
	// splitmix64's first output from state 0 (Vigna's reference implementation).
	if got := Hash(0, 1); got != 0xe220a8397b1dcdaf {
		t.Fatalf("Hash(0, 1) = %#x", got)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1), MaxNsPerMsg * 2} {
		if _, err := New(bad); err == nil {
			t.Fatalf("New(%v) accepted", bad)
		}
	}
	p := WithCalibration(500, Calibration{IterationsPerUs: 200, TrialsPerUs: []float64{200}})
	m := p.Meta()
	if m["cpu_ns_per_msg"] != 500.0 || m["iterations_per_msg"] != 100 || m["calibration_iterations_per_us"] != 200.0 {
		t.Fatalf("meta %v", m)
	}
}

func fastest(trials int, f func()) time.Duration {
	best := time.Duration(math.MaxInt64)
	for range trials {
		start := time.Now()
		f()
		best = min(best, time.Since(start))
	}
	return best
}

func TestWithIterationsIsUncalibratedAndExact(t *testing.T) {
	if WithIterations(0) != nil {
		t.Fatal("0 iterations planted something")
	}
	p := WithIterations(300)
	if p.IterationsPerMsg != 300 || p.NsPerMsg != 0 {
		t.Fatalf("plant %+v: want 300 iterations, no ns", p)
	}
	m := p.Meta()
	if m["iterations_per_msg"] != 300 || m["cpu_ns_per_msg"] != 0 {
		t.Fatalf("meta %v: want iterations_per_msg 300, cpu_ns_per_msg 0", m)
	}
}
