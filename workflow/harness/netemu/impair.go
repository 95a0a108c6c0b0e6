package main

// The impairments of one direction as pure values: each takes its random source and
// the current time as arguments, so the unit tests drive them without sockets or clocks.

import (
	"encoding/binary"
	"math/rand/v2"
)

// Distribution of the jitter added to the fixed delay.
type Distribution int

const (
	DistNormal Distribution = iota
	DistUniform
)

func (d Distribution) String() string {
	if d == DistUniform {
		return "uniform"
	}
	return "normal"
}

// DelayModel is a fixed delay plus jitter. Normal: delay + jitter·N(0,1); uniform:
// delay + U(-jitter, +jitter). Negative samples are clamped to 0 (a frame cannot leave
// before it arrived), which raises the mean slightly only when jitter is comparable to
// the delay.
type DelayModel struct {
	DelayNs  int64
	JitterNs int64
	Dist     Distribution
}

// Sample returns one delay in nanoseconds.
func (m DelayModel) Sample(r *rand.Rand) int64 {
	if m.JitterNs == 0 {
		return m.DelayNs
	}
	var d float64
	if m.Dist == DistUniform {
		d = float64(m.DelayNs) + float64(m.JitterNs)*(2*r.Float64()-1)
	} else {
		d = float64(m.DelayNs) + float64(m.JitterNs)*r.NormFloat64()
	}
	if d < 0 {
		return 0
	}
	return int64(d)
}

// LossModel decides, frame by frame, whether a frame is lost. It keeps state between
// calls (correlation, Gilbert-Elliott state), so one model serves one direction.
type LossModel interface {
	Lose(r *rand.Rand) bool
}

// CorrelatedLoss is Bernoulli loss with rate P whose successive decisions have lag-1
// correlation C. netem's own "loss P C" mixes uniform variates (next = (1-C)·U +
// C·last), which is known to lower the effective loss rate as C grows; this model
// is the two-state Markov chain with the same intent that keeps the mean rate at P:
// P(lose | last lost) = P + C(1-P), P(lose | last kept) = P(1-C). C = 0 is plain
// Bernoulli.
type CorrelatedLoss struct {
	P, C     float64
	lastLost bool
}

func (l *CorrelatedLoss) Lose(r *rand.Rand) bool {
	p := l.P
	if l.C > 0 {
		if l.lastLost {
			p = l.P + l.C*(1-l.P)
		} else {
			p = l.P * (1 - l.C)
		}
	}
	l.lastLost = r.Float64() < p
	return l.lastLost
}

// GilbertElliott is the two-state burst-loss model. P = P(Good→Bad) and R =
// P(Bad→Good) per frame; H is the loss probability in the Bad state and K in the Good
// state (netem's "gemodel p r 1-h 1-k" writes them as success probabilities; here they
// are loss probabilities, so the classic Gilbert model is H=1, K=0). The stationary
// loss rate is (P·H + R·K)/(P+R) and, with H=1, a loss burst lasts 1/R frames on
// average.
type GilbertElliott struct {
	P, R, H, K float64
	bad        bool
}

func (g *GilbertElliott) Lose(r *rand.Rand) bool {
	// Decide with the current state, then move: the first frame after a Good→Bad
	// transition is the first one that can be lost in the burst.
	lossP := g.K
	if g.bad {
		lossP = g.H
	}
	lost := lossP > 0 && r.Float64() < lossP
	if g.bad {
		if r.Float64() < g.R {
			g.bad = false
		}
	} else if r.Float64() < g.P {
		g.bad = true
	}
	return lost
}

// RateLimiter is a link of BitsPerSec with a tail-drop queue: a virtual clock of when
// the link finishes its backlog. A frame is dropped when the backlog plus its own
// transmission time would exceed QueueNs, like a byte-limited FIFO sized in time.
// Bytes are whole Ethernet frames as the veth counts them (no preamble or FCS).
type RateLimiter struct {
	BitsPerSec float64
	QueueNs    int64
	busyUntil  int64
}

// Admit returns the time the frame finishes serialisation (its earliest departure),
// or ok=false when the queue is full (the frame is dropped and takes no link time).
func (l *RateLimiter) Admit(nowNs int64, frameBytes int) (departNs int64, ok bool) {
	txNs := int64(float64(frameBytes) * 8 * 1e9 / l.BitsPerSec)
	start := l.busyUntil
	if start < nowNs {
		start = nowNs
	}
	if start-nowNs+txNs > l.QueueNs {
		return 0, false
	}
	l.busyUntil = start + txNs
	return l.busyUntil, true
}

// FlowKey identifies a flow: the 5-tuple of IPv4/IPv6 TCP/UDP frames, the address pair
// and protocol of other IP frames (and of fragments, so all fragments of a datagram stay
// together), and ethertype + MAC pair otherwise. Fixed size, so it is a cheap map key.
type FlowKey [40]byte

const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86DD
	ethHeaderLen  = 14
)

// IsIP reports whether an Ethernet frame carries IPv4 or IPv6. Loss applies to these
// only: losing ARP would stall every flow behind a neighbour-resolution timeout.
func IsIP(frame []byte) bool {
	if len(frame) < ethHeaderLen {
		return false
	}
	t := binary.BigEndian.Uint16(frame[12:14])
	return t == etherTypeIPv4 || t == etherTypeIPv6
}

// FlowOf returns the flow key of an Ethernet frame; short or malformed frames fall back
// to the Ethernet key, which only ever makes ordering stricter.
func FlowOf(frame []byte) FlowKey {
	var k FlowKey
	if len(frame) < ethHeaderLen {
		k[0] = 0xff
		copy(k[1:], frame)
		return k
	}
	ip := frame[ethHeaderLen:]
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case etherTypeIPv4:
		if len(ip) >= 20 && ip[0]>>4 == 4 {
			ihl := int(ip[0]&0x0f) * 4
			proto := ip[9]
			k[0] = 4
			k[1] = proto
			copy(k[2:10], ip[12:20])
			frag := binary.BigEndian.Uint16(ip[6:8])
			fragmented := frag&0x2000 != 0 || frag&0x1fff != 0
			if !fragmented && (proto == 6 || proto == 17) && ihl >= 20 && len(ip) >= ihl+4 {
				copy(k[10:14], ip[ihl:ihl+4])
			}
			return k
		}
	case etherTypeIPv6:
		if len(ip) >= 40 {
			proto := ip[6]
			k[0] = 6
			k[1] = proto
			copy(k[2:34], ip[8:40])
			// Extension headers are not walked: such frames keep the address-pair key.
			if (proto == 6 || proto == 17) && len(ip) >= 44 {
				copy(k[34:38], ip[40:44])
			}
			return k
		}
	}
	k[0] = 1
	copy(k[1:3], frame[12:14])
	copy(k[3:15], frame[0:12])
	return k
}

// FlowOrder keeps frames of one flow in arrival order: a frame never departs before the
// previous frame of its flow. A single FIFO for all flows would instead turn jitter
// into a running maximum (every frame waits for the slowest one before it), which
// showed in the feasibility study as a p50 of 65 ms for 50 ms ± jitter.
type FlowOrder struct {
	last       map[FlowKey]int64
	sincePrune int
}

func NewFlowOrder() *FlowOrder { return &FlowOrder{last: make(map[FlowKey]int64)} }

// Depart returns the departure time of a frame of flow k that wants to leave at
// wantNs; nowNs lets it forget flows whose last frame has already left (bounded memory
// with many short flows).
func (o *FlowOrder) Depart(k FlowKey, wantNs, nowNs int64) int64 {
	if prev, ok := o.last[k]; ok && prev > wantNs {
		wantNs = prev
	}
	o.last[k] = wantNs
	o.sincePrune++
	if o.sincePrune >= 4096 {
		o.sincePrune = 0
		for key, t := range o.last {
			if t <= nowNs {
				delete(o.last, key)
			}
		}
	}
	return wantNs
}

// Flows is the number of flows currently remembered (for tests).
func (o *FlowOrder) Flows() int { return len(o.last) }

// Impairment is the whole per-direction pipeline for one received frame: loss (IP
// frames only), then the rate limiter, then delay + jitter, then per-flow ordering.
type Impairment struct {
	Loss     LossModel    // nil: no loss
	Rate     *RateLimiter // nil: unlimited
	Delay    DelayModel
	Order    *FlowOrder // nil: frames may reorder freely (-reorder)
	LossRand *rand.Rand // separate streams, so changing the loss settings does not
	JitRand  *rand.Rand // change the delay samples of the same seed
}

// Verdict of the pipeline for one frame.
type Verdict int

const (
	Forward Verdict = iota
	DropLoss
	DropQueue
)

// Apply returns the verdict and, for Forward, the departure time in nanoseconds.
func (im *Impairment) Apply(frame []byte, nowNs int64) (Verdict, int64) {
	if im.Loss != nil && IsIP(frame) && im.Loss.Lose(im.LossRand) {
		return DropLoss, 0
	}
	dep := nowNs
	if im.Rate != nil {
		var ok bool
		if dep, ok = im.Rate.Admit(nowNs, len(frame)); !ok {
			return DropQueue, 0
		}
	}
	dep += im.Delay.Sample(im.JitRand)
	if im.Order != nil {
		dep = im.Order.Depart(FlowOf(frame), dep, nowNs)
	}
	return Forward, dep
}

// NeedsScheduler is false when no frame is ever held (no delay, jitter or rate): the
// receiving thread then forwards directly, which adds the least latency.
func (im *Impairment) NeedsScheduler() bool {
	return im.Rate != nil || im.Delay.DelayNs != 0 || im.Delay.JitterNs != 0
}
