// Package client is the player emulator: one process drives many players, each with
// its own connection, on one precision dispatcher thread (package sched).
package client

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"netstick/prototypes/reference/internal/logs"
	"netstick/prototypes/reference/internal/sched"
	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/wire"
)

// probeTimeoutNs: a probe unanswered for this long is lost (CONTRACT.md §3.3).
const probeTimeoutNs = int64(5 * time.Second)

// ringSize slots per probe kind: enough for 5 s of probes at 200 Hz.
const ringSize = 1024

type probeSlot struct {
	seq      uint32
	sentUnix int64
	sentMono int64
	lateNs   int64 // -1: not scheduled (pingpong)
	used     bool
	answered bool
}

type probeBook struct {
	next   uint32
	sent   uint64
	echoed uint64
	slots  [ringSize]probeSlot
}

type welcomeMsg struct {
	w   wire.Welcome
	err error
}

// player is one emulated player and the transport.Handler of its connection.
type player struct {
	c    *Client
	id   uint32
	rng  *rand.Rand
	conn transport.Conn

	welcome   chan welcomeMsg
	helloMono int64

	mu          sync.Mutex
	books       [2]probeBook // indexed by wire.ProbeKind
	pos         wire.Vec3
	yaw         float32
	inputSeq    uint32
	nextAction  uint32
	actions     map[uint32]int64 // action id -> monotonic send time
	worldChunks uint32
	worldGot    uint32
	worldSeen   map[uint32]struct{} // chunk seqs received: a repeated welcome resends chunks
	worldBytes  int64
	worldBlocks uint32
	worldLoaded bool
	libSeq      uint32
	tooLarge    bool

	// pingpong: probes still to send, and the one awaiting its echo (ppWaiting).
	ppLeft     int
	ppSeq      uint32
	ppSentMono int64
	ppWaiting  bool

	// Decode buffers, used only by Received (never concurrent for one connection).
	stateBuf  []wire.Transform
	changeBuf []wire.BlockChange
	chunkBuf  []wire.ChunkBlock
}

func newPlayer(c *Client, id uint32) *player {
	return &player{
		c: c, id: id, welcome: make(chan welcomeMsg, 1), actions: map[uint32]int64{},
		rng: rand.New(rand.NewPCG(c.cfg.Seed, uint64(id))),
	}
}

// Connected implements transport.Handler.
func (p *player) Connected(transport.Conn) {}

// Disconnected implements transport.Handler.
func (p *player) Disconnected(_ transport.Conn, err error) {
	p.c.playerDisconnected(p, err)
}

// Received implements transport.Handler.
func (p *player) Received(_ transport.Conn, ch transport.Channel, msg []byte) {
	if len(msg) == 0 {
		p.c.dropMalformed(fmt.Errorf("empty message"))
		return
	}
	switch wire.Type(msg[0]) {
	case wire.TProbeEcho:
		pr, err := wire.DecodeProbe(msg)
		if err != nil || pr.Player != p.id {
			p.c.dropMalformed(fmt.Errorf("probe echo: player %d err %v", pr.Player, err))
			return
		}
		p.echo(pr, ch, len(msg))
	case wire.TWelcome:
		w, err := wire.DecodeWelcome(msg)
		if err == nil && w.Player != p.id {
			err = fmt.Errorf("welcome for player %d", w.Player)
		}
		p.mu.Lock()
		if err == nil {
			p.pos, p.worldChunks, p.worldBlocks = w.Spawn, w.WorldChunks, w.WorldBlocks
		}
		p.mu.Unlock()
		select {
		case p.welcome <- welcomeMsg{w, err}:
		default:
		}
		if err == nil && w.WorldChunks == 0 {
			p.worldDone()
		}
	case wire.TWorldChunk:
		m, err := wire.DecodeWorldChunk(msg, p.chunkBuf)
		if err != nil {
			p.c.dropMalformed(err)
			return
		}
		p.chunkBuf = m.Blocks
		p.mu.Lock()
		if p.worldSeen == nil {
			p.worldSeen = map[uint32]struct{}{}
		}
		if _, dup := p.worldSeen[m.Seq]; !dup {
			p.worldSeen[m.Seq] = struct{}{}
			p.worldGot++
			p.worldBytes += int64(len(msg))
		}
		done := p.worldGot == p.worldChunks
		p.mu.Unlock()
		if done {
			p.worldDone()
		}
	case wire.TBlockAck:
		a, err := wire.DecodeBlockAck(msg)
		if err != nil {
			p.c.dropMalformed(err)
			return
		}
		now := sched.Now()
		p.mu.Lock()
		sent, ok := p.actions[a.Action]
		delete(p.actions, a.Action)
		p.mu.Unlock()
		if ok {
			p.c.event(int64(p.id), "block_ack", fmtUs(now-sent), fmt.Sprintf("action=%d ok=%t", a.Action, a.OK))
		}
	case wire.TState:
		s, err := wire.DecodeState(msg, p.stateBuf)
		if err != nil {
			p.c.dropMalformed(err)
			return
		}
		p.stateBuf = s.Transforms
	case wire.TBlockChanges:
		_, ch, err := wire.DecodeBlockChanges(msg, p.changeBuf)
		if err != nil {
			p.c.dropMalformed(err)
			return
		}
		p.changeBuf = ch
	case wire.TKeepalive:
		if _, err := wire.DecodeKeepalive(msg); err != nil {
			p.c.dropMalformed(err)
		}
	default:
		p.c.dropMalformed(fmt.Errorf("unexpected message type %d from the server", msg[0]))
	}
}

func (p *player) worldDone() {
	p.mu.Lock()
	if p.worldLoaded {
		p.mu.Unlock()
		return
	}
	p.worldLoaded = true
	blocks, bytes := p.worldBlocks, p.worldBytes
	p.mu.Unlock()
	p.c.event(int64(p.id), "world_loaded", fmtMs(sched.Now()-p.helloMono), fmt.Sprintf("objects=%d bytes=%d", blocks, bytes))
}

var msgPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// sendProbe sends one probe; lateNs < 0 marks an unscheduled send. A pingpong probe becomes
// the one the player waits for before it is handed to the transport, which may echo it at once.
func (p *player) sendProbe(kind wire.ProbeKind, ch transport.Channel, size int, lateNs int64, pingpong bool) {
	bp := msgPool.Get().(*[]byte)
	defer msgPool.Put(bp)
	now := sched.Now()
	p.mu.Lock()
	b := &p.books[kind]
	seq := b.next
	b.next++
	b.sent++
	b.slots[seq%ringSize] = probeSlot{seq: seq, sentUnix: time.Now().UnixNano(), sentMono: now, lateNs: lateNs, used: true}
	if pingpong {
		p.ppSeq, p.ppSentMono, p.ppWaiting = seq, now, true
	}
	p.mu.Unlock()
	*bp = wire.AppendProbe((*bp)[:0], wire.TProbe, wire.Probe{Kind: kind, Player: p.id, Seq: seq, SentMonoNs: now}, size)
	if err := p.conn.Send(ch, *bp); err != nil {
		p.sendFailed(err)
	}
}

func (p *player) sendFailed(err error) {
	p.mu.Lock()
	first := !p.tooLarge
	p.tooLarge = true
	p.mu.Unlock()
	if first {
		p.c.event(int64(p.id), "error", "", "error="+logs.Sanitize(err.Error()))
	}
}

func (p *player) echo(pr wire.Probe, ch transport.Channel, size int) {
	now := sched.Now()
	p.mu.Lock()
	b := &p.books[pr.Kind]
	slot := &b.slots[pr.Seq%ringSize]
	if !slot.used || slot.seq != pr.Seq || slot.answered || slot.sentMono != pr.SentMonoNs {
		p.mu.Unlock()
		return // duplicate, or too old to be in the ring
	}
	slot.answered = true
	b.echoed++
	s := *slot
	// Only the echo of the probe the player waits for sends the next one: an echo that comes
	// after its probe was given up (pingpongNext) is logged but starts no second chain.
	again := false
	if pr.Kind == wire.ProbeNet && p.ppWaiting && pr.Seq == p.ppSeq {
		p.ppWaiting = false
		again = true
	}
	p.mu.Unlock()
	p.c.rttRow(s.sentUnix, p.id, pr.Seq, now-pr.SentMonoNs, kindNames[pr.Kind], s.lateNs)
	if again {
		p.sendPingpong(ch, size)
	}
}

// sendPingpong sends the next pingpong probe, if the player has any left.
func (p *player) sendPingpong(ch transport.Channel, size int) {
	if p.c.stopping.Load() {
		return
	}
	p.mu.Lock()
	left := p.ppLeft > 0
	if left {
		p.ppLeft--
	}
	p.mu.Unlock()
	if left {
		p.sendProbe(wire.ProbeNet, ch, size, -1, true)
	}
}

// pingpongGiveUp ends the wait for an echo older than the loss timeout (CONTRACT.md §5,
// pingpong): the probe counts as lost and the caller sends the next one. It reports whether it
// gave up, and when to look again (0 once the player has nothing left to wait for).
func (p *player) pingpongGiveUp(now int64) (gaveUp bool, next int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ppWaiting && now-p.ppSentMono >= probeTimeoutNs {
		p.ppWaiting = false
		gaveUp = true
	}
	switch {
	case p.ppWaiting:
		next = p.ppSentMono + probeTimeoutNs
	case p.ppLeft > 0:
		// The echo path is sending the next probe right now, or this call will.
		next = now + probeTimeoutNs
	}
	return gaveUp, next
}

var kindNames = [2]string{"net", "app"}

// probeTotals reports sent, echoed, lost and in-flight probes of one kind.
func (p *player) probeTotals(kind wire.ProbeKind, now int64) (sent, echoed, lost, inflight uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := &p.books[kind]
	for i := range b.slots {
		s := &b.slots[i]
		if s.used && !s.answered && now-s.sentMono < probeTimeoutNs {
			inflight++
		}
	}
	unanswered := b.sent - b.echoed
	inflight = min(inflight, unanswered)
	return b.sent, b.echoed, unanswered - inflight, inflight
}

func (p *player) blockAction(op wire.BlockOp, pos wire.BlockPos) {
	p.mu.Lock()
	id := p.nextAction
	p.nextAction++
	p.actions[id] = sched.Now()
	p.mu.Unlock()
	name := "block_place"
	kind := uint8(1 + p.id%8)
	if op == wire.OpRemove {
		name, kind = "block_remove", 0
	}
	p.c.event(int64(p.id), name, strconv.FormatUint(uint64(id), 10), fmt.Sprintf("x=%d y=%d z=%d", pos.X, pos.Y, pos.Z))
	msg := wire.AppendBlockAction(nil, wire.BlockAction{Action: id, Op: op, Pos: pos, Kind: kind})
	if err := p.conn.Send(transport.Reliable, msg); err != nil {
		p.sendFailed(err)
	}
}

func (p *player) sendInput() {
	p.mu.Lock()
	in := wire.Input{Player: p.id, Seq: p.inputSeq, Pos: p.pos, Yaw: p.yaw}
	p.inputSeq++
	p.mu.Unlock()
	var buf [32]byte
	if err := p.conn.Send(transport.Unreliable, wire.AppendInput(buf[:0], in)); err != nil {
		p.sendFailed(err)
	}
}

func blockUnder(v wire.Vec3) wire.BlockPos {
	return wire.BlockPos{X: int32(math.Floor(float64(v.X))), Y: int32(math.Floor(float64(v.Y))), Z: int32(math.Floor(float64(v.Z)))}
}

func fmtUs(ns int64) string { return strconv.FormatFloat(float64(ns)/1e3, 'f', 3, 64) }
func fmtMs(ns int64) string { return strconv.FormatFloat(float64(ns)/1e6, 'f', 3, 64) }
