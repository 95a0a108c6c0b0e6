// Package config parses and validates the contract's command line (prototypes/CONTRACT.md
// §1 and §5). Every error names the flag or parameter and what was expected.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"netstick/prototypes/reference/internal/plant"
	"netstick/prototypes/reference/internal/transport"
)

// ErrUsage marks bad arguments (exit code 2).
var ErrUsage = errors.New("bad arguments")

// Config is one process's validated configuration.
type Config struct {
	Role            string
	Host            string
	Port            int
	Transport       string
	Players         int
	FirstPlayer     int
	Workload        Workload
	TransportOpts   transport.Options
	Duration        time.Duration
	TickRateHz      float64
	LogDir          string
	RunID           string
	Seed            uint64
	ProbeHz         float64
	ConnectInterval time.Duration
	ConnectParallel int
	ConnectTimeout  time.Duration
	SendSlack       time.Duration
	// Benchmarks only (a planted regression, internal/plant): CPU work per received message.
	PlantCPUNsPerMsg float64
	// Benchmarks only: a fixed number of hash iterations per received message instead, for
	// instruction counts (callgrind), where a calibration in time would measure valgrind.
	PlantIterationsPerMsg int
	Args                  []string
}

// Addr is host:port.
func (c Config) Addr() string {
	return fmt.Sprintf("%s:%d", c.Host, c.Port)
}

type paramList []string

func (p *paramList) String() string     { return strings.Join(*p, " ") }
func (p *paramList) Set(v string) error { *p = append(*p, v); return nil }

func usageErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, a...))
}

// Parse parses args (without the program name). defaultTransport is used when
// -transport is absent.
func Parse(args []string, defaultTransport string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("netstick-ref", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		c                                    Config
		params                               paramList
		duration, tick, probeHz, connTimeout float64
		connInterval, sendSlack              float64
		seed                                 string
	)
	fs.StringVar(&c.Role, "role", "", "server or client (required)")
	fs.StringVar(&c.Host, "host", "127.0.0.1", "server: bind address; client: server address")
	fs.IntVar(&c.Port, "port", 7777, "server port")
	fs.StringVar(&c.Transport, "transport", defaultTransport, "transport: "+strings.Join(transport.Names(), ", "))
	fs.IntVar(&c.Players, "players", 1, "client: players emulated by this process")
	fs.IntVar(&c.FirstPlayer, "first-player", 0, "client: id of this process's first player")
	workload := fs.String("workload", "idle", "workload: "+strings.Join(WorkloadNames(), ", "))
	fs.Var(&params, "param", "workload parameter key=value, or transport option t.key=value (repeatable)")
	fs.Float64Var(&duration, "duration", 0, "seconds; client: workload time after all players connected; server: 0 = until SIGTERM")
	fs.Float64Var(&tick, "tick-rate", 60, "Hz: server tick and client input rate")
	fs.StringVar(&c.LogDir, "log-dir", "", "directory for the logs (required)")
	fs.StringVar(&c.RunID, "run-id", "local", "run id recorded in the metadata")
	fs.StringVar(&seed, "seed", "1", "seed of all randomness (unsigned integer)")
	fs.Float64Var(&probeHz, "probe-hz", 10, "client: rate of each periodic probe kind per player; 0 disables")
	fs.Float64Var(&connInterval, "connect-interval-ms", 2, "client: ms between the starts of two players' connections")
	fs.IntVar(&c.ConnectParallel, "connect-parallel", 16, "client: connection handshakes in flight at once")
	fs.Float64Var(&connTimeout, "connect-timeout-s", 10, "client: seconds before a player's connect attempt fails")
	fs.Float64Var(&sendSlack, "send-slack-us", 100, "client: sends due within this many µs share one wake-up (lateness is logged)")
	fs.Float64Var(&c.PlantCPUNsPerMsg, "plant-cpu-ns-per-msg", 0, "server, benchmarks only: ns of calibrated CPU work per received message (a planted regression); 0 = off")
	fs.IntVar(&c.PlantIterationsPerMsg, "plant-iterations-per-msg", 0, "server, benchmarks only: hash iterations per received message, uncalibrated (a planted regression in instructions); 0 = off")
	if err := fs.Parse(args); err != nil {
		return c, usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return c, usageErr("unexpected argument %q (flags are -name value)", fs.Arg(0))
	}
	c.Args = args
	switch c.Role {
	case "server", "client":
	case "":
		return c, usageErr("-role is required (expected server or client)")
	default:
		return c, usageErr("-role %q: expected server or client", c.Role)
	}
	if c.LogDir == "" {
		return c, usageErr("-log-dir is required")
	}
	if c.Port < 1 || c.Port > 65535 {
		return c, usageErr("-port %d: expected 1..65535", c.Port)
	}
	if c.Host == "" {
		return c, usageErr("-host is empty: expected an address")
	}
	if c.Players < 1 || c.Players > 100000 {
		return c, usageErr("-players %d: expected 1..100000", c.Players)
	}
	if c.FirstPlayer < 0 || c.FirstPlayer > math.MaxUint32-c.Players {
		return c, usageErr("-first-player %d: expected a non-negative id", c.FirstPlayer)
	}
	if !(duration >= 0) || duration > 7*24*3600 {
		return c, usageErr("-duration %v: expected seconds >= 0", duration)
	}
	c.Duration = time.Duration(duration * float64(time.Second))
	if !(tick > 0) || tick > 1000 {
		return c, usageErr("-tick-rate %v: expected Hz in (0, 1000]", tick)
	}
	c.TickRateHz = tick
	s, err := strconv.ParseUint(seed, 10, 64)
	if err != nil {
		return c, usageErr("-seed %q: expected an unsigned integer", seed)
	}
	c.Seed = s
	if !(probeHz >= 0) || probeHz > 1000 {
		return c, usageErr("-probe-hz %v: expected Hz in [0, 1000]", probeHz)
	}
	c.ProbeHz = probeHz
	if !(connInterval >= 0) || connInterval > 60000 {
		return c, usageErr("-connect-interval-ms %v: expected ms in [0, 60000]", connInterval)
	}
	c.ConnectInterval = time.Duration(connInterval * float64(time.Millisecond))
	if c.ConnectParallel < 1 {
		return c, usageErr("-connect-parallel %d: expected >= 1", c.ConnectParallel)
	}
	if !(connTimeout > 0) || connTimeout > 3600 {
		return c, usageErr("-connect-timeout-s %v: expected seconds in (0, 3600]", connTimeout)
	}
	c.ConnectTimeout = time.Duration(connTimeout * float64(time.Second))
	if !(sendSlack >= 0) || sendSlack > 100000 {
		return c, usageErr("-send-slack-us %v: expected µs in [0, 100000]", sendSlack)
	}
	c.SendSlack = time.Duration(sendSlack * float64(time.Microsecond))
	if !(c.PlantCPUNsPerMsg >= 0) || c.PlantCPUNsPerMsg > plant.MaxNsPerMsg {
		return c, usageErr("-plant-cpu-ns-per-msg %v: expected ns in [0, %g]", c.PlantCPUNsPerMsg, float64(plant.MaxNsPerMsg))
	}
	if c.PlantIterationsPerMsg < 0 || c.PlantIterationsPerMsg > plant.MaxIterationsPerMsg {
		return c, usageErr("-plant-iterations-per-msg %d: expected iterations in [0, %d]", c.PlantIterationsPerMsg, plant.MaxIterationsPerMsg)
	}
	if c.PlantIterationsPerMsg > 0 && c.PlantCPUNsPerMsg > 0 {
		return c, usageErr("-plant-iterations-per-msg and -plant-cpu-ns-per-msg: expected at most one (two plants would add up)")
	}

	wparams := map[string]string{}
	c.TransportOpts = transport.Options{}
	for _, p := range params {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return c, usageErr("-param %q: expected key=value", p)
		}
		if tk, isT := strings.CutPrefix(k, "t."); isT {
			c.TransportOpts[tk] = v
			continue
		}
		if _, dup := wparams[k]; dup {
			return c, usageErr("-param %s given twice", k)
		}
		wparams[k] = v
	}
	c.Workload, err = ParseWorkload(*workload, wparams)
	if err != nil {
		return c, err
	}
	return c, nil
}
