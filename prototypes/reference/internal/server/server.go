// Package server is the authoritative game server: it accepts players over any
// transport, echoes RTT probes (net in the receive path, app in the tick), applies
// block actions, syncs transforms and block changes every tick, and runs the
// server-side workloads (world, envmod).
package server

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"netstick/prototypes/reference/internal/config"
	"netstick/prototypes/reference/internal/logs"
	"netstick/prototypes/reference/internal/plant"
	"netstick/prototypes/reference/internal/sched"
	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/wire"
	"netstick/prototypes/reference/internal/world"
)

// keepaliveNs: a player that got nothing for this long gets a keep-alive, so clients
// of connectionless transports can tell a silent server from a dead one.
const keepaliveNs = int64(500 * time.Millisecond)

// maxChangesBytes bounds one BlockChanges message (reliable channel).
const maxChangesBytes = 16 << 10

// Logs are the server's log files.
type Logs struct {
	Events *logs.File
	Ticks  *logs.File
}

type session struct {
	conn       transport.Conn
	player     uint32
	joined     bool
	lastSentNs atomic.Int64
}

type pendingAction struct {
	sess   *session
	action wire.BlockAction
}

type pendingEcho struct {
	conn transport.Conn
	ch   transport.Channel
	msg  []byte
}

// Server is one game server.
type Server struct {
	cfg  config.Config
	tr   transport.Transport
	logs Logs

	mu        sync.Mutex
	sessions  map[transport.Conn]*session
	joined    map[uint32]*session
	moved     map[uint32]wire.Transform
	actions   []pendingAction
	appEchoes []pendingEcho
	world     *world.World
	snapshot  [][]byte // cached; nil when the world changed
	// envmod state, guarded by mu
	envStarted  bool
	envNextNs   int64
	envInterval float64
	envStep     int

	msgsIn, bytesIn, msgsOut, bytesOut atomic.Int64
	malformed                          atomic.Int64
	malformedErr                       atomic.Value // first error of the current second
	maxUnreliable                      int
	plant                              *plant.Plant // nil: nothing planted
}

// New builds the server and its world (the world workload builds it here, before
// the server is READY, so building never counts as measured time).
func New(cfg config.Config, tr transport.Transport, l Logs) *Server {
	w := world.New()
	if cfg.Workload.Name == "world" {
		w = world.Generate(cfg.Workload.Objects, cfg.Seed)
	}
	maxU := min(tr.Caps().MaxUnreliableBytes, 1200)
	return &Server{
		cfg: cfg, tr: tr, logs: l, world: w,
		sessions: map[transport.Conn]*session{}, joined: map[uint32]*session{}, moved: map[uint32]wire.Transform{},
		maxUnreliable: maxU,
	}
}

// Plant makes every message the server receives cost p's work: a planted regression of
// -plant-cpu-ns-per-msg, which only benchmarks set. Call before Run; nil plants nothing.
func (s *Server) Plant(p *plant.Plant) { s.plant = p }

func (s *Server) event(player int64, name, value, detail string) {
	s.logs.Events.Event(player, name, value, detail)
}

func (s *Server) send(sess *session, ch transport.Channel, msg []byte) {
	if err := sess.conn.Send(ch, msg); err == nil {
		s.msgsOut.Add(1)
		s.bytesOut.Add(int64(len(msg)))
		sess.lastSentNs.Store(sched.Now())
	}
}

func (s *Server) dropMalformed(err error) {
	if s.malformed.Add(1) == 1 {
		s.malformedErr.Store(err.Error())
	}
}

// Connected implements transport.Handler.
func (s *Server) Connected(c transport.Conn) {
	s.mu.Lock()
	s.sessions[c] = &session{conn: c}
	s.mu.Unlock()
}

// Disconnected implements transport.Handler.
func (s *Server) Disconnected(c transport.Conn, err error) {
	s.mu.Lock()
	sess := s.sessions[c]
	delete(s.sessions, c)
	if sess != nil && sess.joined && s.joined[sess.player] == sess {
		delete(s.joined, sess.player)
		delete(s.moved, sess.player)
	}
	s.mu.Unlock()
	if sess == nil || !sess.joined {
		return
	}
	reason := "closed"
	if err != nil {
		reason = logs.Sanitize(err.Error())
	}
	s.event(int64(sess.player), "disconnect", "", "reason="+reason)
}

// Received implements transport.Handler.
func (s *Server) Received(c transport.Conn, ch transport.Channel, msg []byte) {
	s.msgsIn.Add(1)
	s.bytesIn.Add(int64(len(msg)))
	s.plant.Work(uint64(len(msg)))
	if len(msg) == 0 {
		s.dropMalformed(fmt.Errorf("empty message"))
		return
	}
	s.mu.Lock()
	sess := s.sessions[c]
	s.mu.Unlock()
	if sess == nil {
		return // raced with a disconnect
	}
	switch wire.Type(msg[0]) {
	case wire.TProbe:
		p, err := wire.DecodeProbe(msg)
		if err != nil {
			s.dropMalformed(err)
			return
		}
		echo := append([]byte(nil), msg...)
		echo[0] = byte(wire.TProbeEcho)
		if p.Kind == wire.ProbeNet {
			s.send(sess, ch, echo)
			return
		}
		s.mu.Lock()
		s.appEchoes = append(s.appEchoes, pendingEcho{conn: c, ch: ch, msg: echo})
		s.mu.Unlock()
	case wire.THello:
		h, err := wire.DecodeHello(msg)
		if err != nil || h.Schema != wire.SchemaVersion {
			s.dropMalformed(fmt.Errorf("hello: schema %d err %v", h.Schema, err))
			return
		}
		s.join(sess, h.Player)
	case wire.TInput:
		in, err := wire.DecodeInput(msg)
		if err != nil {
			s.dropMalformed(err)
			return
		}
		s.mu.Lock()
		if sess.joined {
			s.moved[sess.player] = wire.Transform{Player: sess.player, Pos: in.Pos, Yaw: in.Yaw}
		}
		s.mu.Unlock()
	case wire.TBlockAction:
		a, err := wire.DecodeBlockAction(msg)
		if err != nil {
			s.dropMalformed(err)
			return
		}
		s.mu.Lock()
		s.actions = append(s.actions, pendingAction{sess: sess, action: a})
		s.mu.Unlock()
	default:
		s.dropMalformed(fmt.Errorf("unexpected message type %d from a client", msg[0]))
	}
}

// SpawnPoint spreads players on a grid 2 m apart above the terrain.
func SpawnPoint(player uint32) wire.Vec3 {
	const perRow = 32
	return wire.Vec3{X: float32(int(player%perRow)*2 - perRow), Y: 0, Z: float32(int(player/perRow)*2 - perRow)}
}

func (s *Server) join(sess *session, player uint32) {
	s.mu.Lock()
	if sess.joined && sess.player != player {
		s.mu.Unlock()
		s.dropMalformed(fmt.Errorf("hello for player %d on the connection of player %d", player, sess.player))
		return
	}
	if sess.joined {
		// A repeated hello: the client did not get its welcome (lost on a transport without
		// reliability). Answer again with the current world.
		if s.snapshot == nil {
			s.snapshot = s.world.Snapshot()
		}
		snap, blocks := s.snapshot, s.world.Blocks()
		s.mu.Unlock()
		s.welcome(sess, player, snap, blocks)
		return
	}
	if old := s.joined[player]; old != nil {
		s.mu.Unlock()
		s.event(int64(player), "error", "", "error=player id already connected")
		_ = sess.conn.Close()
		return
	}
	if s.snapshot == nil {
		s.snapshot = s.world.Snapshot()
	}
	snap, blocks := s.snapshot, s.world.Blocks()
	sess.joined, sess.player = true, player
	s.joined[player] = sess
	if s.cfg.Workload.Name == "envmod" && !s.envStarted {
		s.envStarted, s.envInterval = true, s.cfg.Workload.Interval
		s.envNextNs = sched.Now() + int64(s.envInterval*1e9)
	}
	s.mu.Unlock()
	s.event(int64(player), "join", "", "remote="+logs.Sanitize(sess.conn.RemoteAddr()))
	s.welcome(sess, player, snap, blocks)
}

func (s *Server) welcome(sess *session, player uint32, snap [][]byte, blocks int) {
	s.send(sess, transport.Reliable, wire.AppendWelcome(nil, wire.Welcome{
		Player: player, Spawn: SpawnPoint(player), TickRateHz: uint16(math.Round(s.cfg.TickRateHz)),
		WorldBlocks: uint32(blocks), WorldChunks: uint32(len(snap)),
	}))
	for _, m := range snap {
		s.send(sess, transport.Reliable, m)
	}
}

// Run serves until ctx ends or the duration elapses. It prints the READY line via
// ready once the listener is bound.
func (s *Server) Run(ctx context.Context, ready func(addr string)) error {
	ln, err := s.tr.Listen(s.cfg.Addr(), s)
	if err != nil {
		return err
	}
	s.event(-1, "listen", "", "addr="+ln.Addr())
	ready(ln.Addr())
	if s.cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.Duration)
		defer cancel()
	}
	done := make(chan struct{})
	go func() { s.tickLoop(ctx); close(done) }()
	<-ctx.Done()
	<-done
	return ln.Close()
}

func (s *Server) tickLoop(ctx context.Context) {
	sched.PrecisionThread()
	period := int64(1e9 / s.cfg.TickRateHz)
	next := sched.Now() + period
	st := tickState{}
	for tick := uint32(1); ctx.Err() == nil; tick++ {
		sched.SleepUntil(next)
		start := sched.Now()
		lateNs := start - next
		players, objects := s.tick(tick, start, period, &st)
		durNs := sched.Now() - start
		s.logTick(tick, lateNs, durNs, players, objects)
		next += period
		if now := sched.Now(); next < now-period {
			next = now // overloaded: skip ticks rather than spiral
		}
	}
}

func (s *Server) logTick(tick uint32, lateNs, durNs int64, players, objects int) {
	t := time.Now().UnixNano()
	mi, bi, mo, bo := s.msgsIn.Swap(0), s.bytesIn.Swap(0), s.msgsOut.Swap(0), s.bytesOut.Swap(0)
	s.logs.Ticks.Row(func(b []byte) []byte {
		b = strconv.AppendInt(b, t, 10)
		b = append(b, ',')
		b = strconv.AppendUint(b, uint64(tick), 10)
		b = append(b, ',')
		b = strconv.AppendFloat(b, float64(lateNs)/1e3, 'f', 3, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, float64(durNs)/1e3, 'f', 3, 64)
		for _, v := range []int64{int64(players), int64(objects), mi, mo, bi, bo} {
			b = append(b, ',')
			b = strconv.AppendInt(b, v, 10)
		}
		return b
	})
	if tick%uint32(max(1, math.Round(s.cfg.TickRateHz))) == 0 {
		if n := s.malformed.Swap(0); n > 0 {
			first, _ := s.malformedErr.Load().(string)
			s.event(-1, "malformed", strconv.FormatInt(n, 10), "error="+logs.Sanitize(first))
		}
	}
}

// tickState holds buffers reused from tick to tick.
type tickState struct {
	recipients []*session
	changes    []wire.BlockChange
	acks       []pendingAction
	oks        []bool
	moved      []wire.Transform
	msg        []byte
}

func (s *Server) tick(tick uint32, nowNs, periodNs int64, st *tickState) (players, objects int) {
	s.mu.Lock()
	st.acks = append(st.acks[:0], s.actions...)
	s.actions = s.actions[:0]
	st.changes, st.oks = st.changes[:0], st.oks[:0]
	for _, pa := range st.acks {
		a := pa.action
		ok := false
		switch a.Op {
		case wire.OpPlace:
			ok = s.world.Get(a.Pos) == 0 && s.world.Set(a.Pos, a.Kind)
		case wire.OpRemove:
			ok = s.world.Set(a.Pos, 0)
		}
		if ok {
			st.changes = append(st.changes, wire.BlockChange{Pos: a.Pos, Kind: s.world.Get(a.Pos)})
		}
		st.oks = append(st.oks, ok)
	}
	envPlaced := 0
	var envStep int
	var envInterval float64
	if s.envStarted && nowNs >= s.envNextNs {
		envPlaced, envStep, envInterval = s.envmodStep(&st.changes, periodNs)
	}
	if len(st.changes) > 0 {
		s.snapshot = nil
	}
	st.moved = st.moved[:0]
	for _, t := range s.moved {
		st.moved = append(st.moved, t)
	}
	clear(s.moved)
	echoes := s.appEchoes
	s.appEchoes = nil
	st.recipients = st.recipients[:0]
	for _, sess := range s.joined {
		st.recipients = append(st.recipients, sess)
	}
	players, objects = len(s.joined), len(s.joined)+s.world.Blocks()
	s.mu.Unlock()

	if envPlaced > 0 {
		s.event(-1, "envmod_step", strconv.Itoa(envPlaced),
			fmt.Sprintf("step=%d interval_s=%.4f", envStep, envInterval))
	}
	for i, pa := range st.acks {
		s.send(pa.sess, transport.Reliable, wire.AppendBlockAck(st.msg[:0], wire.BlockAck{Action: pa.action.Action, OK: st.oks[i]}))
	}
	for _, e := range echoes {
		if e.conn.Send(e.ch, e.msg) == nil {
			s.msgsOut.Add(1)
			s.bytesOut.Add(int64(len(e.msg)))
		}
	}
	// Transforms: one State message per MTU-sized batch, the same bytes to everyone.
	for start := 0; start < len(st.moved); {
		msg := wire.AppendStateHeader(st.msg[:0], tick)
		n := 0
		for start+n < len(st.moved) && len(msg)+wire.TransformBytes <= s.maxUnreliable {
			msg = wire.AppendTransform(msg, st.moved[start+n])
			n++
		}
		wire.FinishState(msg, n)
		for _, r := range st.recipients {
			s.send(r, transport.Unreliable, msg)
		}
		st.msg = msg
		start += n
	}
	const perMsg = (maxChangesBytes - wire.BlockChangesHeaderBytes) / wire.BlockChangeBytes
	for start := 0; start < len(st.changes); start += perMsg {
		end := min(start+perMsg, len(st.changes))
		msg := wire.AppendBlockChanges(st.msg[:0], tick, st.changes[start:end])
		for _, r := range st.recipients {
			s.send(r, transport.Reliable, msg)
		}
		st.msg = msg
	}
	for _, r := range st.recipients {
		if nowNs-r.lastSentNs.Load() >= keepaliveNs {
			s.send(r, transport.Unreliable, wire.AppendKeepalive(st.msg[:0], tick))
		}
	}
	return players, objects
}

// envmodStep places one grid layer of blocks above the spawn area and shortens the
// interval (Envirostick's environment modification). Called with s.mu held.
func (s *Server) envmodStep(changes *[]wire.BlockChange, periodNs int64) (placed, step int, interval float64) {
	n := s.cfg.Workload.Blocks
	side := int(math.Ceil(math.Sqrt(float64(n))))
	y := int32(8 + s.envStep)
	kind := uint8(1 + s.envStep%8)
	for i := range n {
		p := wire.BlockPos{X: int32(i%side - side/2), Y: y, Z: int32(i/side - side/2)}
		if s.world.Set(p, kind) {
			*changes = append(*changes, wire.BlockChange{Pos: p, Kind: kind})
			placed++
		}
	}
	step, interval = s.envStep, s.envInterval
	s.envStep++
	s.envInterval = math.Max(s.envInterval-s.cfg.Workload.IntervalChange, float64(periodNs)/1e9)
	s.envNextNs += int64(s.envInterval * 1e9)
	return placed, step, interval
}
