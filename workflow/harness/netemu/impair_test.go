package main

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func testRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 99)) }

// udpFrame builds an Ethernet/IPv4/UDP frame from 10.99.0.1:sport to 10.99.0.2:dport.
func udpFrame(sport, dport uint16, payload int) []byte {
	f := make([]byte, 14+20+8+payload)
	binary.BigEndian.PutUint16(f[12:14], etherTypeIPv4)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:4], uint16(20+8+payload))
	ip[8] = 64
	ip[9] = 17
	copy(ip[12:16], []byte{10, 99, 0, 1})
	copy(ip[16:20], []byte{10, 99, 0, 2})
	binary.BigEndian.PutUint16(ip[20:22], sport)
	binary.BigEndian.PutUint16(ip[22:24], dport)
	return f
}

func arpFrame() []byte {
	f := make([]byte, 42)
	copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:12], []byte{2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:14], 0x0806)
	return f
}

func meanStd(xs []float64) (mean, std float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(xs)-1))
}

func TestDelayDistributions(t *testing.T) {
	const n = 100_000
	cases := []struct {
		name               string
		m                  DelayModel
		wantMean, wantStd  float64 // ms
		meanTol, stdRelTol float64
	}{
		{"fixed", DelayModel{DelayNs: 25e6}, 25, 0, 1e-9, 0},
		{"normal", DelayModel{DelayNs: 25e6, JitterNs: 5e6, Dist: DistNormal}, 25, 5, 0.1, 0.02},
		{"uniform", DelayModel{DelayNs: 25e6, JitterNs: 5e6, Dist: DistUniform}, 25, 5 / math.Sqrt(3), 0.1, 0.02},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := testRand(1)
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = float64(c.m.Sample(r)) / 1e6
			}
			mean, std := meanStd(xs)
			if math.Abs(mean-c.wantMean) > c.meanTol {
				t.Errorf("mean = %.4f ms, want %.4f ± %.4f", mean, c.wantMean, c.meanTol)
			}
			if c.wantStd == 0 && std != 0 || c.wantStd > 0 && math.Abs(std/c.wantStd-1) > c.stdRelTol {
				t.Errorf("std = %.4f ms, want %.4f (±%.0f %%)", std, c.wantStd, 100*c.stdRelTol)
			}
		})
	}
	t.Run("clamped at zero", func(t *testing.T) {
		m := DelayModel{JitterNs: 5e6}
		r := testRand(2)
		zeros := 0
		for range n {
			d := m.Sample(r)
			if d < 0 {
				t.Fatalf("negative delay %d ns", d)
			}
			if d == 0 {
				zeros++
			}
		}
		if zeros < n/3 || zeros > 2*n/3 { // half of N(0, σ) is negative
			t.Errorf("%d of %d samples clamped to 0, want about half", zeros, n)
		}
	})
}

func lossRate(m LossModel, r *rand.Rand, n int) (rate float64, seq []bool) {
	seq = make([]bool, n)
	lost := 0
	for i := range seq {
		seq[i] = m.Lose(r)
		if seq[i] {
			lost++
		}
	}
	return float64(lost) / float64(n), seq
}

// lag1 is the lag-1 autocorrelation of a 0/1 sequence.
func lag1(seq []bool) float64 {
	xs := make([]float64, len(seq))
	for i, b := range seq {
		if b {
			xs[i] = 1
		}
	}
	mean, std := meanStd(xs)
	cov := 0.0
	for i := 1; i < len(xs); i++ {
		cov += (xs[i] - mean) * (xs[i-1] - mean)
	}
	return cov / float64(len(xs)-1) / (std * std)
}

func TestBernoulliLossRate(t *testing.T) {
	const n = 200_000
	for _, p := range []float64{0, 0.01, 0.05, 0.5, 1} {
		rate, seq := lossRate(&CorrelatedLoss{P: p}, testRand(3), n)
		tol := 4*math.Sqrt(p*(1-p)/n) + 1e-12 // 4 standard errors
		if math.Abs(rate-p) > tol {
			t.Errorf("p=%v: loss rate %.5f, want %v ± %.5f", p, rate, p, tol)
		}
		if p > 0 && p < 1 {
			if c := lag1(seq); math.Abs(c) > 0.02 {
				t.Errorf("p=%v: lag-1 correlation %.4f, want about 0 (independent)", p, c)
			}
		}
	}
}

func TestCorrelatedLossKeepsMeanRate(t *testing.T) {
	const n = 400_000
	for _, c := range []float64{0.25, 0.5, 0.9} {
		for _, p := range []float64{0.05, 0.1} {
			rate, seq := lossRate(&CorrelatedLoss{P: p, C: c}, testRand(4), n)
			// Correlation inflates the variance of the mean by (1+c)/(1-c).
			tol := 5 * math.Sqrt(p*(1-p)/n*(1+c)/(1-c))
			if math.Abs(rate-p) > tol {
				t.Errorf("p=%v c=%v: loss rate %.5f, want %v ± %.5f", p, c, rate, p, tol)
			}
			if got := lag1(seq); math.Abs(got-c) > 0.02 {
				t.Errorf("p=%v c=%v: lag-1 correlation %.4f, want %v ± 0.02", p, c, got, c)
			}
		}
	}
}

func TestGilbertElliott(t *testing.T) {
	const n = 1_000_000
	t.Run("classic h=1 k=0", func(t *testing.T) {
		g := &GilbertElliott{P: 0.01, R: 0.25, H: 1, K: 0}
		rate, seq := lossRate(g, testRand(5), n)
		want := 0.01 / (0.01 + 0.25)
		if math.Abs(rate-want) > 0.003 {
			t.Errorf("stationary loss %.5f, want p/(p+r) = %.5f ± 0.003", rate, want)
		}
		bursts, inBurst, lost := 0, false, 0
		for _, l := range seq {
			if l {
				lost++
				if !inBurst {
					bursts++
				}
			}
			inBurst = l
		}
		if mean := float64(lost) / float64(bursts); math.Abs(mean-1/0.25) > 0.2 {
			t.Errorf("mean burst length %.3f frames, want 1/r = 4 ± 0.2", mean)
		}
	})
	t.Run("general h and k", func(t *testing.T) {
		g := &GilbertElliott{P: 0.02, R: 0.2, H: 0.5, K: 0.01}
		rate, _ := lossRate(g, testRand(6), n)
		want := (0.02*0.5 + 0.2*0.01) / (0.02 + 0.2)
		if math.Abs(rate-want) > 0.003 {
			t.Errorf("stationary loss %.5f, want (p·h + r·k)/(p+r) = %.5f ± 0.003", rate, want)
		}
	})
}

func TestRateLimiterTimingAndTailDrop(t *testing.T) {
	// 1 Mbit/s and 1250 B frames: 10 ms each; the 50 ms queue holds 5 transmissions.
	l := &RateLimiter{BitsPerSec: 1e6, QueueNs: 50e6}
	for i := 1; i <= 5; i++ {
		dep, ok := l.Admit(0, 1250)
		if !ok || dep != int64(i)*10e6 {
			t.Fatalf("frame %d at t=0: got (%d ns, %v), want (%d ns, true)", i, dep, ok, int64(i)*10e6)
		}
	}
	if _, ok := l.Admit(0, 1250); ok {
		t.Fatal("6th back-to-back frame admitted, want a tail drop (backlog 50 ms + 10 ms > 50 ms)")
	}
	// A dropped frame takes no link time: at t=25 ms the backlog is 25 ms, so two fit.
	for _, want := range []int64{60e6, 70e6} {
		if dep, ok := l.Admit(25e6, 1250); !ok || dep != want {
			t.Fatalf("at t=25 ms: got (%d, %v), want (%d, true)", dep, ok, want)
		}
	}
	if _, ok := l.Admit(25e6, 1250); ok {
		t.Fatal("at t=25 ms a third frame was admitted past the 50 ms queue")
	}
	// An idle link starts from now, not from its old busy time.
	if dep, ok := l.Admit(1e9, 125); !ok || dep != 1e9+1e6 {
		t.Fatalf("idle link: got (%d, %v), want (%d, true)", dep, ok, int64(1e9+1e6))
	}

	t.Run("overload keeps the configured rate", func(t *testing.T) {
		// Offer 2 Mbit/s of 1000 B frames (one every 4 ms) to a 1 Mbit/s link for 10 s.
		l := &RateLimiter{BitsPerSec: 1e6, QueueNs: 50e6}
		var admitted, dropped int
		var last int64
		for now := int64(0); now < 10e9; now += 4e6 {
			dep, ok := l.Admit(now, 1000)
			if !ok {
				dropped++
				continue
			}
			if admitted > 0 && dep-last != 8e6 {
				t.Fatalf("departures %d ns apart, want 8 ms (1000 B at 1 Mbit/s)", dep-last)
			}
			if dep-now > 50e6 {
				t.Fatalf("frame waits %d ns, more than the 50 ms queue", dep-now)
			}
			admitted++
			last = dep
		}
		bps := float64(admitted) * 8000 / (float64(last) / 1e9)
		if math.Abs(bps/1e6-1) > 0.01 {
			t.Errorf("throughput %.0f bit/s, want 1e6 ± 1 %%", bps)
		}
		if dropped < 1200 || dropped > 1300 { // half of 2500 offered
			t.Errorf("%d of %d frames dropped, want about half", dropped, admitted+dropped)
		}
	})
}

func TestFlowKeys(t *testing.T) {
	a, b := udpFrame(1000, 7777, 100), udpFrame(1001, 7777, 100)
	if FlowOf(a) == FlowOf(b) {
		t.Error("UDP frames with different source ports share a flow key")
	}
	if FlowOf(a) != FlowOf(udpFrame(1000, 7777, 50)) {
		t.Error("frames of one 5-tuple have different flow keys")
	}
	// Fragments carry no ports after the first: every fragment of a datagram must
	// share one key, whatever bytes follow the IP header.
	f1, f2 := udpFrame(1000, 7777, 100), udpFrame(2000, 9999, 100)
	binary.BigEndian.PutUint16(f1[14+6:], 0x2000) // MF, offset 0
	binary.BigEndian.PutUint16(f2[14+6:], 0x00b9) // offset 1480
	if FlowOf(f1) != FlowOf(f2) {
		t.Error("fragments of one address pair have different flow keys")
	}
	if !IsIP(a) || IsIP(arpFrame()) || IsIP([]byte{1, 2}) {
		t.Error("IsIP misclassifies IPv4 / ARP / a runt frame")
	}
	if FlowOf(arpFrame()) == FlowOf(a) {
		t.Error("an ARP frame shares the flow key of an IP frame")
	}
	_ = FlowOf(nil) // must not panic
	_ = FlowOf(make([]byte, 15))
}

func TestLossSparesNonIPFrames(t *testing.T) {
	im := &Impairment{Loss: &CorrelatedLoss{P: 1}, LossRand: testRand(7), JitRand: testRand(8)}
	if v, _ := im.Apply(arpFrame(), 0); v != Forward {
		t.Errorf("ARP frame verdict %v with 100 %% loss, want Forward (loss applies to IP only)", v)
	}
	if v, _ := im.Apply(udpFrame(1, 2, 10), 0); v != DropLoss {
		t.Errorf("IP frame verdict %v with 100 %% loss, want DropLoss", v)
	}
	if im.NeedsScheduler() {
		t.Error("loss alone needs no scheduler: such a direction forwards directly")
	}
}

// runOrder pushes frames of several flows through Impairment.Apply and the heap and
// returns, per flow, the sequence numbers in departure order, and the departure
// delays (ms) of all frames.
func runOrder(t *testing.T, reorder bool) (perFlow map[uint16][]int, delaysMs []float64) {
	t.Helper()
	im := &Impairment{
		Delay:    DelayModel{DelayNs: 50e6, JitterNs: 7e6, Dist: DistNormal},
		LossRand: testRand(9), JitRand: testRand(10),
	}
	if !reorder {
		im.Order = NewFlowOrder()
	}
	s := NewScheduler()
	arrival := map[*frame]int64{}
	// 20 flows at 60 Hz each: within a flow frames are 16.7 ms apart, less than the
	// jitter's spread, so unordered delivery does reorder.
	const flows, perFlowN = 20, 300
	for i := range perFlowN {
		for fl := range flows {
			now := int64(i)*16_666_667 + int64(fl)*800_000
			data := udpFrame(uint16(1000+fl), 7777, 16)
			binary.BigEndian.PutUint32(data[14+28:], uint32(i))
			v, dep := im.Apply(data, now)
			if v != Forward {
				t.Fatalf("verdict %v without loss or rate", v)
			}
			f := newFrame(data)
			f.depNs = dep
			arrival[f] = now
			s.Push(f)
		}
	}
	perFlow = map[uint16][]int{}
	last := int64(math.MinInt64)
	for {
		f, _, pending := s.PopDue(math.MaxInt64)
		if f == nil {
			if pending {
				t.Fatal("PopDue at +inf left a frame pending")
			}
			break
		}
		if f.depNs < last {
			t.Fatalf("heap popped departure %d after %d", f.depNs, last)
		}
		last = f.depNs
		port := binary.BigEndian.Uint16(f.data[14+20:])
		perFlow[port] = append(perFlow[port], int(binary.BigEndian.Uint32(f.data[14+28:])))
		delaysMs = append(delaysMs, float64(f.depNs-arrival[f])/1e6)
	}
	if len(delaysMs) != flows*perFlowN {
		t.Fatalf("popped %d frames, pushed %d", len(delaysMs), flows*perFlowN)
	}
	return perFlow, delaysMs
}

func inversions(seqs map[uint16][]int) int {
	n := 0
	for _, s := range seqs {
		for i := 1; i < len(s); i++ {
			if s[i] < s[i-1] {
				n++
			}
		}
	}
	return n
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func TestPerFlowFIFOAndReorder(t *testing.T) {
	fifo, fifoDelays := runOrder(t, false)
	if n := inversions(fifo); n != 0 {
		t.Errorf("per-flow FIFO: %d frames left before an earlier frame of their flow, want 0", n)
	}
	reordered, reorderDelays := runOrder(t, true)
	if n := inversions(reordered); n < 50 {
		t.Errorf("reorder mode: %d inversions within flows, want many (jitter spread > frame spacing)", n)
	}
	// Ordering per flow (not globally) keeps the median delay near 50 ms; a global FIFO
	// would make it a running maximum (about 65 ms measured).
	if m := median(fifoDelays); m < 49 || m > 53 {
		t.Errorf("per-flow FIFO median delay %.2f ms, want about 50 (not a running maximum)", m)
	}
	if m := median(reorderDelays); math.Abs(m-50) > 1 {
		t.Errorf("reorder median delay %.2f ms, want 50 ± 1", m)
	}
}

func TestFlowOrderForgetsDepartedFlows(t *testing.T) {
	o := NewFlowOrder()
	for i := range 10_000 {
		var k FlowKey
		binary.BigEndian.PutUint32(k[:], uint32(i))
		o.Depart(k, int64(i), int64(i)) // each flow's frame leaves at once
	}
	if o.Flows() > 4096 {
		t.Errorf("%d flows remembered after they all departed, want at most one pruning interval (4096)", o.Flows())
	}
}

func TestSchedulerTiesAndPopDue(t *testing.T) {
	s := NewScheduler()
	for i, dep := range []int64{30, 10, 20, 10} {
		f := newFrame([]byte{byte(i)})
		f.depNs = dep
		s.Push(f)
	}
	if f, next, pending := s.PopDue(5); f != nil || next != 10 || !pending {
		t.Fatalf("PopDue(5) = (%v, %d, %v), want (nil, 10, true)", f, next, pending)
	}
	var got []byte
	for {
		f, _, _ := s.PopDue(100)
		if f == nil {
			break
		}
		got = append(got, f.data[0])
	}
	if string(got) != string([]byte{1, 3, 2, 0}) {
		t.Errorf("pop order %v, want [1 3 2 0] (by departure, ties in arrival order)", got)
	}
	if s.MaxLen() != 4 || s.Len() != 0 {
		t.Errorf("MaxLen %d Len %d, want 4 and 0", s.MaxLen(), s.Len())
	}
}

func TestLateHistQuantiles(t *testing.T) {
	var h LateHist
	if h.QuantileUs(0.5) != 0 {
		t.Error("empty histogram quantile != 0")
	}
	for i := range 98 {
		h.Add(int64(i) * 1000) // 0..97 µs
	}
	h.Add(5_000_000)   // 5 ms
	h.Add(200_000_000) // 200 ms, overflow
	h.Add(-5)          // clamped to 0
	if got := h.QuantileUs(0.5); got != 50 {
		t.Errorf("p50 %v µs, want 50 (bucket upper edge)", got)
	}
	if got := h.QuantileUs(0.985); got != 5100 {
		t.Errorf("p98.5 %v µs, want 5100 (100 µs buckets above 1 ms)", got)
	}
	if got := h.QuantileUs(1); got != 200_000 {
		t.Errorf("max quantile %v µs, want the overflow's max 200000", got)
	}
}
