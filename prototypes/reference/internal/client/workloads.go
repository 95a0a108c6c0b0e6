package client

import (
	"math"

	"netstick/prototypes/reference/internal/server"
	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/wire"
)

// probeTask sends one kind of probe periodically (periodic net/app probes, stream).
type probeTask struct {
	p        *player
	kind     wire.ProbeKind
	ch       transport.Channel
	size     int
	periodNs int64
}

func (t *probeTask) Fire(due, now int64) (int64, bool) {
	t.p.sendProbe(t.kind, t.ch, t.size, now-due, false)
	return nextDue(due, t.periodNs, now), true
}

// nextDue keeps the schedule fixed (no drift), but after a stall longer than a period
// it skips the missed sends instead of bursting them.
func nextDue(due, period, now int64) int64 {
	next := due + period
	if next < now-period {
		next += (now - next) / period * period
	}
	return next
}

// pingpongTask sends a player's first pingpong probe, then watches its chain: each echo sends
// the next probe (player.echo), and a probe whose echo is still missing after the loss timeout
// is given up here and the next one sent, so that a lost echo on the unreliable channel costs
// one timeout instead of stopping the player.
type pingpongTask struct {
	p       *player
	ch      transport.Channel
	size    int
	started bool
}

func (t *pingpongTask) Fire(_, now int64) (int64, bool) {
	if !t.started {
		t.started = true
		t.p.sendPingpong(t.ch, t.size)
		return now + probeTimeoutNs, true
	}
	gaveUp, next := t.p.pingpongGiveUp(now)
	if gaveUp {
		t.p.sendPingpong(t.ch, t.size)
		next = now + probeTimeoutNs
	}
	return next, next != 0
}

// libTask samples the library's own RTT estimate at 2 Hz.
type libTask struct {
	p   *player
	est transport.RTTEstimator
}

func (t *libTask) Fire(due, now int64) (int64, bool) {
	if rtt, ok := t.est.LibRTT(); ok {
		t.p.mu.Lock()
		seq := t.p.libSeq
		t.p.libSeq++
		t.p.mu.Unlock()
		t.p.c.rttRow(nowUnix(), t.p.id, seq, rtt.Nanoseconds(), "lib", -1)
	}
	return nextDue(due, 500_000_000, now), true
}

// wanderTask is a random walk at a fixed speed inside a square, one input per tick.
type wanderTask struct {
	p        *player
	periodNs int64
	step     float64 // metres per tick
	half     float64 // half the side of the square
	turnProb float64 // chance per tick of a new random heading (about once a second)
}

func (t *wanderTask) Fire(due, now int64) (int64, bool) {
	p := t.p
	p.mu.Lock()
	if p.rng.Float64() < t.turnProb {
		p.yaw = float32(p.rng.Float64() * 2 * math.Pi)
	}
	x := float64(p.pos.X) + t.step*math.Cos(float64(p.yaw))
	z := float64(p.pos.Z) + t.step*math.Sin(float64(p.yaw))
	if x < -t.half || x > t.half || z < -t.half || z > t.half {
		p.yaw = float32(math.Mod(float64(p.yaw)+math.Pi, 2*math.Pi)) // turn back at the edge
		x, z = math.Max(-t.half, math.Min(t.half, x)), math.Max(-t.half, math.Min(t.half, z))
	}
	p.pos.X, p.pos.Z = float32(x), float32(z)
	p.mu.Unlock()
	p.sendInput()
	return nextDue(due, t.periodNs, now), true
}

// activeTask: jump and place a block under yourself, every interval, until blocks
// are placed (Net-Celerity workload 2), or forever with continuous=true.
type activeTask struct {
	p          *player
	periodNs   int64
	left       int
	continuous bool
}

func (t *activeTask) Fire(due, now int64) (int64, bool) {
	p := t.p
	p.mu.Lock()
	feet := blockUnder(p.pos)
	p.pos.Y++ // land on the new block
	p.mu.Unlock()
	p.sendInput()
	p.blockAction(wire.OpPlace, feet)
	t.left--
	return nextDue(due, t.periodNs, now), t.continuous || t.left > 0
}

// toggleTask places and removes a block at the player's own spot (Envirostick RPC
// impact). Spawn points are 2 m apart, so spots never collide.
type toggleTask struct {
	p        *player
	periodNs int64
	spot     wire.BlockPos
	placed   bool
}

func (t *toggleTask) Fire(due, now int64) (int64, bool) {
	op := wire.OpPlace
	if t.placed {
		op = wire.OpRemove
	}
	t.placed = !t.placed
	t.p.blockAction(op, t.spot)
	return nextDue(due, t.periodNs, now), true
}

// schedule adds the player's tasks, each with a seeded random phase.
func (c *Client) schedule(p *player, startNs int64) {
	w := c.cfg.Workload
	phase := func(periodNs int64) int64 { return startNs + p.rng.Int64N(max(periodNs, 1)) }
	hzNs := func(hz float64) int64 { return int64(math.Round(1e9 / hz)) }
	if c.cfg.ProbeHz > 0 {
		period := hzNs(c.cfg.ProbeHz)
		if w.Name != "stream" && w.Name != "pingpong" {
			c.disp.Add(phase(period), &probeTask{p: p, kind: wire.ProbeNet, ch: transport.Unreliable, size: wire.ProbeHeaderBytes, periodNs: period})
		}
		c.disp.Add(phase(period), &probeTask{p: p, kind: wire.ProbeApp, ch: transport.Unreliable, size: wire.ProbeHeaderBytes, periodNs: period})
	}
	if est, ok := p.conn.(transport.RTTEstimator); ok {
		c.disp.Add(phase(500_000_000), &libTask{p: p, est: est})
	}
	tick := hzNs(c.cfg.TickRateHz)
	switch w.Name {
	case "stream":
		period := hzNs(w.Rate)
		c.disp.Add(phase(period), &probeTask{p: p, kind: wire.ProbeNet, ch: w.Channel, size: w.Size, periodNs: period})
	case "pingpong":
		p.mu.Lock()
		p.ppLeft = w.Count
		p.mu.Unlock()
		c.disp.Add(phase(100_000_000), &pingpongTask{p: p, ch: w.Channel, size: w.Size})
	case "wander":
		c.disp.Add(phase(tick), &wanderTask{p: p, periodNs: tick, step: w.Speed / c.cfg.TickRateHz,
			half: w.Area / 2, turnProb: 1 / c.cfg.TickRateHz})
	case "active":
		period := int64(w.Interval * 1e9)
		c.disp.Add(phase(period), &activeTask{p: p, periodNs: period, left: w.Blocks, continuous: w.Continuous})
	case "rpc-toggle":
		period := int64(w.Interval * 1e9)
		spawn := server.SpawnPoint(p.id)
		spot := wire.BlockPos{X: int32(spawn.X) + 1, Y: 0, Z: int32(spawn.Z)}
		c.disp.Add(phase(period), &toggleTask{p: p, periodNs: period, spot: spot})
	}
}
