// Command netemu is Netstick's user-space network emulator: it bridges two interfaces
// (the middle ends of two veth pairs, in a namespace of their own) with AF_PACKET raw
// sockets and impairs each direction independently with delay, jitter, loss
// (Bernoulli with correlation, or Gilbert-Elliott) and a rate limit with a tail-drop
// queue. It exists because this kernel has no netem.
//
//	netemu -a ema -b emb -ab-delay 25ms -ba-delay 25ms -stats-out stats.json
//
// Flags per direction use the prefix ab- (frames arriving on -a, leaving on -b) and
// ba- (the reverse); see -h. It prints "NETEMU READY a=IF_A b=IF_B" once both sockets
// are bound and forwarding, and on SIGTERM/SIGINT (or after -duration) writes its
// counters as JSON to -stats-out and exits 0. Exit codes: 1 runtime failure, 2 bad
// flags, 3 an interface cannot be opened.
//
// The veth ends must have offloads off (ethtool -K DEV tx off rx off tso off gso off
// gro off): otherwise AF_PACKET sees frames with unfinished checksums and GSO
// super-packets larger than the MTU.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	exitOK      = 0
	exitRuntime = 1
	exitFlags   = 2
	exitLink    = 3
)

// DirConfig is the impairment of one direction as given on the command line.
type DirConfig struct {
	Delay, Jitter time.Duration
	Dist          Distribution
	Reorder       bool
	Loss          float64
	LossCorr      float64
	GEP, GER      float64
	GEH, GEK      float64
	GE            bool // any -X-ge-* flag given
	RateBps       float64
	QueueMs       float64
}

// Config is the whole command line.
type Config struct {
	A, B     string
	AB, BA   DirConfig
	Seed     uint64
	StatsOut string
	Duration time.Duration
}

// distFlag parses -X-dist.
type distFlag struct{ d *Distribution }

func (f distFlag) String() string {
	if f.d == nil {
		return "normal"
	}
	return f.d.String()
}

func (f distFlag) Set(s string) error {
	switch s {
	case "normal":
		*f.d = DistNormal
	case "uniform":
		*f.d = DistUniform
	default:
		return fmt.Errorf("expected normal or uniform, got %q", s)
	}
	return nil
}

func defineDir(fs *flag.FlagSet, p string, c *DirConfig, desc string) {
	fs.DurationVar(&c.Delay, p+"-delay", 0, "fixed one-way delay "+desc+" (e.g. 25ms)")
	fs.DurationVar(&c.Jitter, p+"-jitter", 0, "jitter "+desc+": std deviation (normal) or half-width (uniform)")
	fs.Var(distFlag{&c.Dist}, p+"-dist", "jitter distribution "+desc+": normal|uniform")
	fs.BoolVar(&c.Reorder, p+"-reorder", false, "let jittered frames reorder "+desc+" (default: FIFO per 5-tuple flow)")
	fs.Float64Var(&c.Loss, p+"-loss", 0, "loss probability of IP frames "+desc+" (0..1)")
	fs.Float64Var(&c.LossCorr, p+"-loss-corr", 0, "correlation of successive loss decisions "+desc+" (0..1)")
	fs.Float64Var(&c.GEP, p+"-ge-p", 0, "Gilbert-Elliott P(Good->Bad) per frame "+desc)
	fs.Float64Var(&c.GER, p+"-ge-r", 0, "Gilbert-Elliott P(Bad->Good) per frame "+desc)
	fs.Float64Var(&c.GEH, p+"-ge-h", 1, "Gilbert-Elliott loss probability in the Bad state "+desc)
	fs.Float64Var(&c.GEK, p+"-ge-k", 0, "Gilbert-Elliott loss probability in the Good state "+desc)
	fs.Float64Var(&c.RateBps, p+"-rate-bps", 0, "link rate in bit/s "+desc+" (0 = unlimited)")
	fs.Float64Var(&c.QueueMs, p+"-queue-ms", 50, "tail-drop queue limit "+desc+", in ms of transmission time at -"+p+"-rate-bps")
}

// parseArgs parses and validates the command line. Errors name the flag and the
// expected value; flag.ErrHelp is returned for -h.
func parseArgs(args []string, stderr io.Writer) (*Config, error) {
	c := &Config{}
	fs := flag.NewFlagSet("netemu", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.A, "a", "", "interface of side A (frames from A go out on B with the ab- impairment)")
	fs.StringVar(&c.B, "b", "", "interface of side B")
	defineDir(fs, "ab", &c.AB, "A->B")
	defineDir(fs, "ba", &c.BA, "B->A")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of all randomness (each direction has its own streams)")
	fs.StringVar(&c.StatsOut, "stats-out", "", "write the final counters as JSON to this file (default: stdout)")
	fs.DurationVar(&c.Duration, "duration", 0, "stop after this long (0 = run until SIGTERM/SIGINT)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: expected only flags", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.A == "" || c.B == "" {
		return nil, errors.New("-a and -b: expected the two interface names to bridge (e.g. -a ema -b emb)")
	}
	if c.A == c.B {
		return nil, fmt.Errorf("-a and -b: expected two different interfaces, got %q twice", c.A)
	}
	for _, d := range []struct {
		p string
		c *DirConfig
	}{{"ab", &c.AB}, {"ba", &c.BA}} {
		d.c.GE = set[d.p+"-ge-p"] || set[d.p+"-ge-r"] || set[d.p+"-ge-h"] || set[d.p+"-ge-k"]
		if err := validateDir(d.p, d.c, set); err != nil {
			return nil, err
		}
	}
	if c.Duration < 0 {
		return nil, fmt.Errorf("-duration: expected a duration >= 0, got %v", c.Duration)
	}
	if c.StatsOut != "" {
		dir := filepath.Dir(c.StatsOut)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("-stats-out %s: expected a file in an existing directory, %s is not one", c.StatsOut, dir)
		}
	}
	return c, nil
}

func prob(name string, v float64) error {
	if !(v >= 0 && v <= 1) { // also rejects NaN
		return fmt.Errorf("-%s: expected a probability in [0,1], got %v", name, v)
	}
	return nil
}

func validateDir(p string, c *DirConfig, set map[string]bool) error {
	if c.Delay < 0 {
		return fmt.Errorf("-%s-delay: expected a duration >= 0, got %v", p, c.Delay)
	}
	if c.Jitter < 0 {
		return fmt.Errorf("-%s-jitter: expected a duration >= 0, got %v", p, c.Jitter)
	}
	for _, f := range []struct {
		n string
		v float64
	}{{"loss", c.Loss}, {"loss-corr", c.LossCorr}, {"ge-p", c.GEP}, {"ge-r", c.GER}, {"ge-h", c.GEH}, {"ge-k", c.GEK}} {
		if err := prob(p+"-"+f.n, f.v); err != nil {
			return err
		}
	}
	if c.GE && (set[p+"-loss"] && c.Loss > 0 || set[p+"-loss-corr"] && c.LossCorr > 0) {
		return fmt.Errorf("-%s-loss/-%s-loss-corr and -%s-ge-p/-%s-ge-r/-%s-ge-h/-%s-ge-k are mutually exclusive: "+
			"expected either Bernoulli loss or Gilbert-Elliott loss", p, p, p, p, p, p)
	}
	if c.GE {
		if c.GEP <= 0 {
			return fmt.Errorf("-%s-ge-p: expected a probability in (0,1] when any -%s-ge-* flag is given, got %v", p, p, c.GEP)
		}
		if c.GER <= 0 {
			return fmt.Errorf("-%s-ge-r: expected a probability in (0,1] when Gilbert-Elliott loss is on "+
				"(0 would make the Bad state permanent), got %v", p, c.GER)
		}
	}
	if !(c.RateBps >= 0) || math.IsInf(c.RateBps, 0) {
		return fmt.Errorf("-%s-rate-bps: expected bits per second >= 0 (0 = unlimited), got %v", p, c.RateBps)
	}
	if !(c.QueueMs > 0) || math.IsInf(c.QueueMs, 0) {
		return fmt.Errorf("-%s-queue-ms: expected milliseconds > 0, got %v", p, c.QueueMs)
	}
	return nil
}

// newImpairment builds the pipeline of one direction; stream separates the random
// streams of the two directions under one seed.
func newImpairment(c *DirConfig, seed uint64, stream uint64) *Impairment {
	im := &Impairment{
		Delay:    DelayModel{DelayNs: c.Delay.Nanoseconds(), JitterNs: c.Jitter.Nanoseconds(), Dist: c.Dist},
		LossRand: rand.New(rand.NewPCG(seed, 2*stream+1)),
		JitRand:  rand.New(rand.NewPCG(seed, 2*stream+2)),
	}
	switch {
	case c.GE:
		im.Loss = &GilbertElliott{P: c.GEP, R: c.GER, H: c.GEH, K: c.GEK}
	case c.Loss > 0:
		im.Loss = &CorrelatedLoss{P: c.Loss, C: c.LossCorr}
	}
	if c.RateBps > 0 {
		im.Rate = &RateLimiter{BitsPerSec: c.RateBps, QueueNs: int64(c.QueueMs * 1e6)}
	}
	// Without jitter, departures already follow arrival order (fixed delay after a FIFO
	// rate limiter), so flow tracking would only cost time on every frame.
	if !c.Reorder && c.Jitter > 0 {
		im.Order = NewFlowOrder()
	}
	return im
}

func dirParams(c *DirConfig, im *Impairment) DirParams {
	p := DirParams{
		Mode: "direct", DelayUs: float64(c.Delay.Nanoseconds()) / 1e3, JitterUs: float64(c.Jitter.Nanoseconds()) / 1e3,
		Dist: c.Dist.String(), Reorder: c.Reorder, RateBps: c.RateBps, QueueMs: c.QueueMs,
	}
	if im.NeedsScheduler() {
		p.Mode = "scheduled"
	}
	if c.GE {
		p.GEP, p.GER, p.GEH, p.GEK = c.GEP, c.GER, c.GEH, c.GEK
	} else {
		p.Loss, p.LossCorr = c.Loss, c.LossCorr
	}
	return p
}

var (
	logMu  sync.Mutex
	logOut io.Writer = os.Stderr // run's stderr
)

// logf writes one diagnostic line; the forwarding threads use it for rare events only.
func logf(format string, args ...any) {
	logMu.Lock()
	defer logMu.Unlock()
	fmt.Fprintf(logOut, "netemu: "+format+"\n", args...)
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	logMu.Lock()
	logOut = stderr
	logMu.Unlock()
	cfg, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "netemu: %v\n", err)
		return exitFlags
	}
	// Four threads sit in blocking system calls; with only as many Ps as cores, a
	// goroutine made ready (a sender woken for a new head) waited for sysmon to retake
	// a P, which measured as delays of up to 15 ms. Spare Ps remove the wait.
	runtime.GOMAXPROCS(8)

	// Signals are caught before the sockets open, so a stop during start-up still
	// reaches the normal exit path.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)

	la, err := OpenLink(cfg.A)
	if err != nil {
		fmt.Fprintf(stderr, "netemu: -a: cannot open interface: %v\n", err)
		return exitLink
	}
	defer func() { _ = la.Close() }()
	lb, err := OpenLink(cfg.B)
	if err != nil {
		fmt.Fprintf(stderr, "netemu: -b: cannot open interface: %v\n", err)
		return exitLink
	}
	defer func() { _ = lb.Close() }()

	base := time.Now()
	clock := func() int64 { return int64(time.Since(base)) } // monotonic, read via the vDSO
	dirs := [2]*Direction{}
	for i, d := range []struct {
		name    string
		in, out *Link
		c       *DirConfig
	}{{"ab", la, lb, &cfg.AB}, {"ba", lb, la, &cfg.BA}} {
		im := newImpairment(d.c, cfg.Seed, uint64(i))
		dir := &Direction{Name: d.name, In: d.in, Out: d.out, Imp: im, Params: dirParams(d.c, im)}
		if im.NeedsScheduler() {
			dir.Sched = NewScheduler()
		}
		dirs[i] = dir
		p := dir.Params
		logf("%s %s->%s: mode=%s delay=%v jitter=%v dist=%s reorder=%v loss=%v corr=%v ge=(p=%v r=%v h=%v k=%v) rate_bps=%v queue_ms=%v",
			d.name, d.in.Name, d.out.Name, p.Mode, d.c.Delay, d.c.Jitter, p.Dist, p.Reorder, p.Loss, p.LossCorr,
			p.GEP, p.GER, p.GEH, p.GEK, p.RateBps, p.QueueMs)
	}

	var stopping atomic.Bool
	done := make(chan struct{})
	fatalCh := make(chan error, 2)
	fatal := func(err error) {
		select {
		case fatalCh <- err:
		default:
		}
	}
	var wg sync.WaitGroup
	for _, d := range dirs {
		wg.Go(func() { d.RunReceiver(clock, &stopping, fatal) })
		if d.Sched != nil {
			wg.Go(func() { d.Sched.RunSender(d.Out, &d.Stats, clock, done) })
		}
	}
	fmt.Fprintf(stdout, "NETEMU READY a=%s b=%s\n", cfg.A, cfg.B)

	var timeout <-chan time.Time
	if cfg.Duration > 0 {
		timeout = time.After(cfg.Duration)
	}
	reason, code := "", exitOK
	select {
	case s := <-sigs:
		reason = "signal SIGINT"
		if s == syscall.SIGTERM {
			reason = "signal SIGTERM"
		}
	case <-timeout:
		reason = "duration"
	case err := <-fatalCh:
		reason, code = "error: "+err.Error(), exitRuntime
		fmt.Fprintf(stderr, "netemu: %v\n", err)
	}

	stopping.Store(true)
	close(done)
	joined := make(chan struct{})
	go func() { wg.Wait(); close(joined) }()
	allJoined := true
	select {
	case <-joined:
	case <-time.After(2 * time.Second): // receivers notice within recvTimeoutNs
		allJoined = false
		fmt.Fprintln(stderr, "netemu: a forwarding thread did not stop within 2 s; the report lacks its CPU time and lateness")
	}

	rep := &Report{Schema: reportSchema, A: cfg.A, B: cfg.B, Seed: cfg.Seed, StopReason: reason, WallS: time.Since(base).Seconds()}
	rep.fillProcessUsage()
	for i, d := range dirs {
		var inFlight, maxQ uint64
		if d.Sched != nil {
			inFlight, maxQ = uint64(d.Sched.Len()), uint64(d.Sched.MaxLen())
		}
		r := d.Stats.report(d.Params, inFlight, maxQ, d.In.KernelDrops(), allJoined)
		if i == 0 {
			rep.AB = r
		} else {
			rep.BA = r
		}
	}
	if err := writeReport(rep, cfg.StatsOut, stdout); err != nil {
		fmt.Fprintf(stderr, "netemu: %v\n", err)
		return exitRuntime
	}
	return code
}
