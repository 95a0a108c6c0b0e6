package main

import (
	"math"
	"testing"
)

// runs returns the lengths of the runs of true (bursts) and of false (gaps) in seq.
func runs(seq []bool) (bursts, gaps []int) {
	n := 0
	for i, v := range seq {
		n++
		if i+1 == len(seq) || seq[i+1] != v {
			if v {
				bursts = append(bursts, n)
			} else {
				gaps = append(gaps, n)
			}
			n = 0
		}
	}
	return bursts, gaps
}

func meanInt(xs []int) float64 {
	s := 0
	for _, x := range xs {
		s += x
	}
	return float64(s) / float64(len(xs))
}

// The turbulent profile's up direction, loss 0.10 with correlation 0.25, as a chain of
// frames: a burst continues with q = P(lose | last lost) = 0.1 + 0.25 x 0.9 = 0.325, so
// its length is geometric with mean 1/(1-q) = 1.48 frames and P(length >= k) =
// q^(k-1); a gap continues with 1 - P(lose | last kept) = 1 - 0.075, mean 13.3 frames.
// Nothing sticks in the lossy state: in a million frames no burst is longer than the
// geometric law allows (P(length >= 20) = 5e-10 per burst).
func TestTurbulentLossBurstsFollowTheModel(t *testing.T) {
	const n = 1_000_000
	const p, c = 0.10, 0.25
	rate, seq := lossRate(&CorrelatedLoss{P: p, C: c}, testRand(11), n)
	bursts, gaps := runs(seq)
	q := p + c*(1-p)
	wantBurst, wantGap := 1/(1-q), 1/(p*(1-c))
	t.Logf("loss %.4f, %d bursts of mean %.3f frames (model %.3f), gaps of mean %.2f (model %.2f)",
		rate, len(bursts), meanInt(bursts), wantBurst, meanInt(gaps), wantGap)
	// Standard errors of the means: the geometric law's sd is sqrt(q)/(1-q).
	if se := math.Sqrt(q) / (1 - q) / math.Sqrt(float64(len(bursts))); math.Abs(meanInt(bursts)-wantBurst) > 5*se {
		t.Errorf("mean burst %.4f frames, want %.4f ± %.4f", meanInt(bursts), wantBurst, 5*se)
	}
	g := 1 - p*(1-c)
	if se := math.Sqrt(g) / (1 - g) / math.Sqrt(float64(len(gaps))); math.Abs(meanInt(gaps)-wantGap) > 5*se {
		t.Errorf("mean gap %.3f frames, want %.3f ± %.3f", meanInt(gaps), wantGap, 5*se)
	}
	longest := 0
	for k := 2; k <= 5; k++ {
		atLeast := 0
		for _, b := range bursts {
			if b >= k {
				atLeast++
			}
			longest = max(longest, b)
		}
		got, want := float64(atLeast)/float64(len(bursts)), math.Pow(q, float64(k-1))
		se := math.Sqrt(want * (1 - want) / float64(len(bursts)))
		if math.Abs(got-want) > 5*se {
			t.Errorf("P(burst >= %d frames) = %.5f, want q^%d = %.5f ± %.5f", k, got, k-1, want, 5*se)
		}
	}
	if longest >= 20 {
		t.Errorf("a burst of %d frames in %d: the chain stuck in the lossy state", longest, n)
	}
}
