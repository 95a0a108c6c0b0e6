// Command netstick-ref is the reference prototype: a minimal authoritative voxel game
// server and a many-player emulator over real transport libraries, implementing the
// Netstick prototype contract (prototypes/CONTRACT.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"netstick/prototypes/reference/internal/client"
	"netstick/prototypes/reference/internal/config"
	"netstick/prototypes/reference/internal/logs"
	"netstick/prototypes/reference/internal/plant"
	"netstick/prototypes/reference/internal/server"
	"netstick/prototypes/reference/internal/transport"
	_ "netstick/prototypes/reference/internal/transport/all"
	"netstick/prototypes/reference/internal/wire"
)

// Exit codes of CONTRACT.md §2.
const (
	exitOK          = 0
	exitInternal    = 1
	exitUsage       = 2
	exitBind        = 3
	exitConnect     = 4
	exitServerLost  = 5
	exitLogs        = 6
	flushPeriod     = 500 * time.Millisecond
	defaultProtocol = "tcp"
)

func main() {
	spareProc()
	// NETSTICK_CPUPROFILE=<file> writes a Go CPU profile of this process (for
	// developers tuning the emulator; never set by the pipeline).
	if path := os.Getenv("NETSTICK_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			_ = pprof.StartCPUProfile(f)
			code := run(os.Args[1:], os.Stdout, os.Stderr)
			pprof.StopCPUProfile()
			_ = f.Close()
			os.Exit(code)
		}
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// spareProc gives the Go scheduler one more P than the CPUs this process may use. The
// dispatcher and tick threads sleep in clock_nanosleep and must take a P again when they
// wake; with no idle P they would queue behind busy goroutines for milliseconds (seen as
// 3-4 ms send-lateness p99 when a process is pinned to one CPU). An explicit GOMAXPROCS in
// the environment is respected.
func spareProc() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := config.Parse(args, defaultProtocol, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "netstick-ref: %v\n", err)
		return exitUsage
	}
	tr, err := transport.New(cfg.Transport, cfg.TransportOpts)
	if err != nil {
		fmt.Fprintf(stderr, "netstick-ref: -transport %s: %v\n", cfg.Transport, err)
		return exitUsage
	}
	if problem := probeTooLarge(cfg.Workload, cfg.Transport, tr.Caps()); problem != "" {
		fmt.Fprintf(stderr, "netstick-ref: %s\n", problem)
		return exitUsage
	}
	if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
		fmt.Fprintf(stderr, "netstick-ref: -log-dir: %v\n", err)
		return exitLogs
	}
	proc := "server"
	if cfg.Role == "client" {
		proc = fmt.Sprintf("client-%d", cfg.FirstPlayer)
	}
	metaPath := filepath.Join(cfg.LogDir, proc+".meta.json")
	meta := newMeta(cfg, tr, proc)
	var planted *plant.Plant
	if cfg.Role == "server" {
		// Calibrated before READY and before meta.json, which records what was planted.
		if planted, err = plant.New(cfg.PlantCPUNsPerMsg); err != nil {
			fmt.Fprintf(stderr, "netstick-ref: -plant-cpu-ns-per-msg: %v\n", err)
			return exitInternal
		}
		if cfg.PlantIterationsPerMsg > 0 { // config allows one of the two
			planted = plant.WithIterations(cfg.PlantIterationsPerMsg)
		}
		meta["plant"] = planted.Meta()
	}
	if err := logs.WriteJSONAtomic(metaPath, meta); err != nil {
		fmt.Fprintf(stderr, "netstick-ref: -log-dir: %v\n", err)
		return exitLogs
	}
	events, err := logs.Create(filepath.Join(cfg.LogDir, proc+".events.csv"), "t_unix_ns,player,event,value,detail")
	if err != nil {
		fmt.Fprintf(stderr, "netstick-ref: -log-dir: %v\n", err)
		return exitLogs
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	var code int
	var reason string
	var files []*logs.File
	if cfg.Role == "server" {
		ticks, err := logs.Create(filepath.Join(cfg.LogDir, "server.ticks.csv"),
			"t_unix_ns,tick,tick_late_us,tick_duration_us,players_connected,networked_objects,msgs_in,msgs_out,bytes_in,bytes_out")
		if err != nil {
			fmt.Fprintf(stderr, "netstick-ref: -log-dir: %v\n", err)
			return exitLogs
		}
		files = []*logs.File{events, ticks}
		flusher := logs.StartFlusher(flushPeriod, files...)
		srv := server.New(cfg, tr, server.Logs{Events: events, Ticks: ticks})
		srv.Plant(planted)
		err = srv.Run(ctx, func(addr string) {
			fmt.Fprintf(stdout, "NETSTICK READY role=server transport=%s addr=%s pid=%d schema=%d\n",
				cfg.Transport, addr, os.Getpid(), wire.SchemaVersion)
		})
		code, reason = classify(err)
		code, reason = finish(flusher, code, reason, stderr)
	} else {
		rtt, err := logs.Create(filepath.Join(cfg.LogDir, proc+".rtt.csv"), "t_unix_ns,player,seq,rtt_us,kind,send_late_us")
		if err != nil {
			fmt.Fprintf(stderr, "netstick-ref: -log-dir: %v\n", err)
			return exitLogs
		}
		files = []*logs.File{events, rtt}
		flusher := logs.StartFlusher(flushPeriod, files...)
		cl := client.New(cfg, tr, client.Logs{RTT: rtt, Events: events}, stdout)
		err = cl.Run(ctx)
		code, reason = classify(err)
		code, reason = finish(flusher, code, reason, stderr)
	}
	if code != exitOK {
		fmt.Fprintf(stderr, "netstick-ref: %s\n", reason)
	}
	meta["end_unix_ns"] = time.Now().UnixNano()
	meta["exit_code"] = code
	meta["exit_reason"] = reason
	meta["status"] = "exited"
	if err := logs.WriteJSONAtomic(metaPath, meta); err != nil && code == exitOK {
		fmt.Fprintf(stderr, "netstick-ref: %v\n", err)
		return exitLogs
	}
	return code
}

// finish stops the flusher; a log write error turns success into exit code 6.
func finish(fl *logs.Flusher, code int, reason string, stderr io.Writer) (int, string) {
	err := fl.Stop()
	select {
	case ferr := <-fl.Err:
		if err == nil {
			err = ferr
		}
	default:
	}
	if err != nil && code == exitOK {
		return exitLogs, err.Error()
	}
	return code, reason
}

func classify(err error) (int, string) {
	switch {
	case err == nil:
		return exitOK, "finished"
	case errors.Is(err, transport.ErrBind):
		return exitBind, err.Error()
	case errors.Is(err, client.ErrConnectFailed):
		return exitConnect, err.Error()
	case errors.Is(err, client.ErrServerLost):
		return exitServerLost, err.Error()
	}
	return exitInternal, err.Error()
}

// probeTooLarge says why a stream or pingpong probe cannot travel on its channel: a probe is
// one message (its size is the round trip's payload) and is never split, so one larger than the
// transport carries is refused before anything starts (CONTRACT.md section 5, message sizes).
func probeTooLarge(w config.Workload, name string, caps transport.Caps) string {
	if w.Name != "stream" && w.Name != "pingpong" {
		return ""
	}
	limit, channel := caps.MaxUnreliableBytes, "unreliable"
	if w.Channel == transport.Reliable {
		limit, channel = caps.MaxReliableBytes, "reliable"
	}
	if w.Size <= limit {
		return ""
	}
	return fmt.Sprintf("-param size=%d: %d bytes on the %s channel: transport %s carries at most %d bytes there",
		w.Size, w.Size, channel, name, limit)
}

func newMeta(cfg config.Config, tr transport.Transport, proc string) map[string]any {
	host, _ := os.Hostname()
	caps := tr.Caps()
	eff := map[string]string{"reliable": "reliable", "unreliable": "unreliable"}
	if !caps.NativeReliable {
		eff["reliable"] = "unreliable (the transport has no reliable mode)"
	}
	if !caps.NativeUnreliable {
		eff["unreliable"] = "reliable (the transport has no unreliable mode)"
	}
	params := map[string]string{}
	for k, v := range cfg.Workload.Params {
		params[k] = v
	}
	meta := map[string]any{
		"schema":             wire.SchemaVersion,
		"role":               cfg.Role,
		"proc":               proc,
		"prototype":          "reference",
		"transport":          cfg.Transport,
		"library_versions":   libraryVersions(tr),
		"args":               append([]string{"netstick-ref"}, cfg.Args...),
		"workload":           cfg.Workload.Name,
		"params":             params,
		"transport_options":  cfg.TransportOpts,
		"effective_channels": eff,
		// The largest message on each channel (CONTRACT.md section 5), held against the
		// manifest's message_limits by check-logs.
		"message_limits": map[string]int{
			"reliable_bytes": caps.MaxReliableBytes, "unreliable_bytes": caps.MaxUnreliableBytes,
		},
		"run_id":        cfg.RunID,
		"seed":          cfg.Seed,
		"players":       cfg.Players,
		"first_player":  cfg.FirstPlayer,
		"tick_rate_hz":  cfg.TickRateHz,
		"probe_hz":      cfg.ProbeHz,
		"send_slack_us": cfg.SendSlack.Seconds() * 1e6,
		"duration_s":    cfg.Duration.Seconds(),
		"pid":           os.Getpid(),
		"host":          host,
		"start_unix_ns": time.Now().UnixNano(),
		"status":        "running",
	}
	if s, ok := tr.(transport.Settings); ok {
		meta["transport_settings"] = s.Settings()
	}
	return meta
}

// libraryVersions lists the Go toolchain, the transport libraries compiled in, the C
// library libenet as loaded, and what a transport reports itself (CONTRACT.md §3.1: every
// name of the manifest's library_versions, with the version that really runs).
func libraryVersions(tr transport.Transport) map[string]string {
	out := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		out["go"] = bi.GoVersion
		for _, d := range bi.Deps {
			for _, lib := range []string{"xtaci/kcp-go", "quic-go/quic-go", "coder/websocket", "pion/webrtc", "pion/sctp", "golang.org/x/sys"} {
				if strings.Contains(d.Path, lib) {
					out[d.Path] = d.Version
				}
			}
		}
	}
	if v, ok := linkedLibenet(); ok {
		out["libenet"] = v
	}
	if v, ok := tr.(interface{ LibraryVersions() map[string]string }); ok {
		for k, val := range v.LibraryVersions() {
			out[k] = val
		}
	}
	return out
}
