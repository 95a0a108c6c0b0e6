// Package plant makes the server slower by a known amount, for benchmarks only: a planted
// regression with which a benchmark measures how small a change its design can see
// (-plant-cpu-ns-per-msg; the manifest lists it under benchmark_flags, which ordinary
// campaigns may not set).
//
// The work is deterministic and CPU-bound: a fixed number of iterations of a cheap integer
// hash per message, never a sleep or a spin on the clock, so a planted run executes the same
// instructions per message whatever else the machine does. The number of iterations comes
// from the nanoseconds asked for and the hash's speed here, measured once at start
// (Calibrate: a few tens of milliseconds, the median of several trials) and recorded in
// meta.json.
package plant

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"
)

// MaxNsPerMsg bounds the flag: 10 ms of work per message would stall any server, which is
// no longer a regression but an outage.
const MaxNsPerMsg = 1e7

// MaxIterationsPerMsg bounds -plant-iterations-per-msg alike (about 10 ms at a few ns each).
const MaxIterationsPerMsg = 10_000_000

// The calibration: Trials trials of about TrialDuration each, after a warm-up of about
// warmup that sizes them.
const (
	Trials        = 7
	TrialDuration = 4 * time.Millisecond
	warmup        = 2 * time.Millisecond
)

// zeros counts hashes that came out 0: practically never (one in 2^64), but the compiler
// cannot know that, so the iterations are always executed.
var zeros atomic.Uint64

// Hash runs n iterations of the splitmix64 step from x. Each iteration depends on the one
// before (two multiplications in series), so iterations cannot overlap and their cost is a
// fixed number of instructions, and of cycles on a given CPU.
func Hash(x uint64, n int) uint64 {
	for range n {
		x += 0x9e3779b97f4a7c15
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
		x = (x ^ (x >> 27)) * 0x94d049bb133111eb
		x ^= x >> 31
	}
	return x
}

// Calibration is the hash's measured speed on this machine at start.
type Calibration struct {
	IterationsPerUs float64   // the median of the trials
	TrialsPerUs     []float64 // every trial's iterations per µs, in the order they ran
	Took            time.Duration
}

// timeIterations is the wall time of n iterations.
func timeIterations(n int) time.Duration {
	start := time.Now()
	if Hash(uint64(n), n) == 0 {
		zeros.Add(1)
	}
	return time.Since(start)
}

// Calibrate measures the hash's iterations per µs: a warm-up doubling the iterations until
// they take warmup, then trials trials of about trial each. The median resists a trial slowed
// by preemption; the total is bounded (about 2*warmup + trials*trial).
func Calibrate(trials int, trial time.Duration) (Calibration, error) {
	start := time.Now()
	n := 1 << 10
	took := timeIterations(n)
	for took < warmup && n < 1<<40 {
		n *= 2
		took = timeIterations(n)
	}
	if took <= 0 {
		return Calibration{}, fmt.Errorf("plant calibration: %d hash iterations took no measurable time", n)
	}
	perTrial := max(1, int(float64(n)*float64(trial)/float64(took)))
	c := Calibration{}
	for range max(1, trials) {
		d := timeIterations(perTrial)
		if d <= 0 {
			return Calibration{}, fmt.Errorf("plant calibration: %d hash iterations took no measurable time", perTrial)
		}
		c.TrialsPerUs = append(c.TrialsPerUs, float64(perTrial)/(float64(d.Nanoseconds())/1e3))
	}
	c.IterationsPerUs = median(c.TrialsPerUs)
	c.Took = time.Since(start)
	return c, nil
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	mid := len(s) / 2
	if len(s)%2 == 0 {
		return (s[mid-1] + s[mid]) / 2
	}
	return s[mid]
}

// Plant is the work done for every message the server receives. A nil *Plant plants
// nothing and costs one comparison per message.
type Plant struct {
	NsPerMsg         float64
	IterationsPerMsg int
	Calibration      Calibration
}

// New calibrates and returns the plant of nsPerMsg nanoseconds per message; nil for 0
// (nothing planted, nothing calibrated).
func New(nsPerMsg float64) (*Plant, error) {
	if !(nsPerMsg >= 0) || nsPerMsg > MaxNsPerMsg {
		return nil, fmt.Errorf("plant: %v ns per message: expected 0..%g", nsPerMsg, float64(MaxNsPerMsg))
	}
	if nsPerMsg == 0 {
		return nil, nil
	}
	c, err := Calibrate(Trials, TrialDuration)
	if err != nil {
		return nil, err
	}
	return WithCalibration(nsPerMsg, c), nil
}

// WithCalibration is the plant of nsPerMsg nanoseconds per message at a known speed.
func WithCalibration(nsPerMsg float64, c Calibration) *Plant {
	return &Plant{
		NsPerMsg:         nsPerMsg,
		IterationsPerMsg: int(math.Round(nsPerMsg * c.IterationsPerUs / 1e3)),
		Calibration:      c,
	}
}

// WithIterations is the plant of a fixed number of iterations per message, uncalibrated: its
// size in instructions is the same under any profiler (callgrind runs the hash ~50x slower, so
// a calibration in time would plant another amount of instructions there than natively).
func WithIterations(n int) *Plant {
	if n <= 0 {
		return nil
	}
	return &Plant{IterationsPerMsg: n}
}

// Work does one message's planted work; salt varies the hash's input (e.g. the message's
// length), never the number of iterations.
func (p *Plant) Work(salt uint64) {
	if p == nil || p.IterationsPerMsg == 0 {
		return
	}
	if Hash(salt, p.IterationsPerMsg) == 0 {
		zeros.Add(1)
	}
}

// Meta is what meta.json records of the plant (its "plant" key): what was asked for, the
// iterations each message costs and the calibration they come from; {"cpu_ns_per_msg": 0}
// when nothing is planted.
func (p *Plant) Meta() map[string]any {
	if p == nil {
		return map[string]any{"cpu_ns_per_msg": 0}
	}
	if p.NsPerMsg == 0 {
		return map[string]any{
			"cpu_ns_per_msg":     0,
			"iterations_per_msg": p.IterationsPerMsg,
			"hash":               "splitmix64 step, iterations in series",
		}
	}
	return map[string]any{
		"cpu_ns_per_msg":                       p.NsPerMsg,
		"iterations_per_msg":                   p.IterationsPerMsg,
		"hash":                                 "splitmix64 step, iterations in series",
		"calibration_iterations_per_us":        p.Calibration.IterationsPerUs,
		"calibration_trials_iterations_per_us": p.Calibration.TrialsPerUs,
		"calibration_ms":                       float64(p.Calibration.Took.Microseconds()) / 1e3,
	}
}
