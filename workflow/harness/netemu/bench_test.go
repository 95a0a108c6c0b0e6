package main

// The emulator benchmark, for `netstick bench-harness`:
//
//	cd workflow/harness/netemu && go test -count=1 -run '^TestBench$' -timeout 300s . -args -bench-out /abs/path/netemu-bench.json
//
// It needs root and ethtool and takes about 30 s (-bench-window 8s, the default, per
// phase; three phases). The JSON goes to -bench-out (written
// atomically) and, with -v, to the test log.

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

var (
	benchOut    = flag.String("bench-out", "", "run TestBench and write its JSON result to this file (absolute path)")
	benchWindow = flag.Duration("bench-window", 8*time.Second, "TestBench: measured window of each phase (after 1 s of warm-up)")
)

const (
	benchFlows = 200
	benchHz    = 60
	benchWarmS = 1.0
)

// BenchPhase is one load phase: 200 flows × 60 Hz × 100 B echoed, so 12 000 frames/s
// each way through the emulator (none for the direct baseline).
type BenchPhase struct {
	RTTP50Us         float64 `json:"rtt_p50_us"`
	RTTP99Us         float64 `json:"rtt_p99_us"`
	ProbesSent       int     `json:"probes_sent"`
	ProbesLost       int     `json:"probes_lost"`
	EmulatorCPUCores float64 `json:"emulator_cpu_cores,omitempty"` // CPU seconds per second over the window
	FramesDropped    uint64  `json:"frames_dropped"`               // by the emulator, both directions, all causes
	FramesForwarded  uint64  `json:"frames_forwarded,omitempty"`
	MaxQueueFrames   uint64  `json:"max_queue_frames,omitempty"`
	// How late the emulator itself sent frames after their departure time (worse
	// direction; scheduled mode only): separates its lateness from the endpoints'.
	EmulatorLateP50Us float64 `json:"emulator_depart_late_p50_us,omitempty"`
	EmulatorLateP99Us float64 `json:"emulator_depart_late_p99_us,omitempty"`
}

// BenchResult is the -bench-out document. The top-level figures are the ones the
// harness reports; the phases hold the raw numbers they come from.
type BenchResult struct {
	Schema string `json:"schema"`
	// RTT added by a pass-through emulator compared with a direct veth, same load.
	AddedRTTP50Us float64 `json:"added_rtt_p50_us"`
	AddedRTTP99Us float64 `json:"added_rtt_p99_us"`
	// p50 RTT minus the 50 ms injected (25 ms each way).
	DelayErrorP50Us float64 `json:"delay_error_p50_us"`
	// Emulator CPU while forwarding the load with 25 ms each way (the scheduled path)
	// and as pure pass-through.
	EmulatorCPUCores            float64    `json:"emulator_cpu_cores"`
	EmulatorCPUCoresPassthrough float64    `json:"emulator_cpu_cores_passthrough"`
	FramesDropped               uint64     `json:"frames_dropped"` // both emulated phases
	Flows                       int        `json:"flows"`
	RateHz                      int        `json:"rate_hz"`
	PayloadBytes                int        `json:"payload_bytes"`
	WindowS                     float64    `json:"window_s"`
	Direct                      BenchPhase `json:"direct"`
	Passthrough                 BenchPhase `json:"passthrough"`
	Delay25msEachWay            BenchPhase `json:"delay_25ms_each_way"`
	Host                        struct {
		CPUs      int    `json:"cpus"`
		GoVersion string `json:"go_version"`
		Kernel    string `json:"kernel"`
	} `json:"host"`
}

// benchPhase runs the load once; emu is nil for the direct baseline.
func benchPhase(t *testing.T, p *prober, emu *emulator) BenchPhase {
	t.Helper()
	benchWindowS := benchWindow.Seconds()
	total := float64(benchFlows * benchHz)
	warm := int(benchWarmS * total)
	n := int(benchWindowS * total)
	cpuDone := make(chan float64, 1)
	if emu != nil {
		// The CPU window starts after the warm-up probes and lasts the measured window.
		go func() {
			time.Sleep(time.Duration(benchWarmS * float64(time.Second)))
			c0, err0 := emu.cpuSeconds()
			time.Sleep(time.Duration(benchWindowS * float64(time.Second)))
			c1, err1 := emu.cpuSeconds()
			if err0 != nil || err1 != nil {
				cpuDone <- -1
				return
			}
			cpuDone <- (c1 - c0) / benchWindowS
		}()
	}
	r := p.run(warm, n, total, 300*time.Millisecond)
	ph := BenchPhase{
		RTTP50Us: pct(r.RTTsUs, 0.5), RTTP99Us: pct(r.RTTsUs, 0.99),
		ProbesSent: r.Sent, ProbesLost: r.Sent - r.Received,
	}
	if emu != nil {
		cores := <-cpuDone
		if cores < 0 {
			t.Fatal("reading the emulator's /proc/PID/stat failed")
		}
		ph.EmulatorCPUCores = cores
		rep := emu.stop(t)
		ph.FramesDropped = framesDropped(rep.AB) + framesDropped(rep.BA)
		ph.FramesForwarded = rep.AB.FramesOut + rep.BA.FramesOut
		ph.MaxQueueFrames = max(rep.AB.MaxQueueFrames, rep.BA.MaxQueueFrames)
		ph.EmulatorLateP50Us = max(rep.AB.DepartLateP50Us, rep.BA.DepartLateP50Us)
		ph.EmulatorLateP99Us = max(rep.AB.DepartLateP99Us, rep.BA.DepartLateP99Us)
	}
	return ph
}

// TestBench measures the emulator's overhead and accuracy under game-like load. It
// runs only with -bench-out.
func TestBench(t *testing.T) {
	if *benchOut == "" {
		t.Skip("skipped: benchmark; run with -args -bench-out FILE (see bench_test.go)")
	}
	if !filepath.IsAbs(*benchOut) {
		t.Fatalf("-bench-out %q: expected an absolute path (go test runs in the package directory)", *benchOut)
	}
	if *benchWindow < time.Second {
		t.Fatalf("-bench-window %v: expected at least 1s", *benchWindow)
	}
	if os.Geteuid() != 0 {
		t.Fatal("-bench-out: the benchmark needs root (namespaces, AF_PACKET)")
	}
	requireRootAndIP(t)
	tp := setupTopology(t)
	bin := buildEmulator(t)
	startEcho(t, tp)

	res := BenchResult{
		Schema: "netstick.netemu.bench.v1", Flows: benchFlows, RateHz: benchHz, PayloadBytes: probeSize,
		WindowS: benchWindow.Seconds(),
	}
	res.Host.CPUs = runtime.NumCPU()
	res.Host.GoVersion = runtime.Version()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		res.Host.Kernel = strings.TrimSpace(string(b))
	}

	direct := newProber(t, tp, directIPB, benchFlows)
	res.Direct = benchPhase(t, direct, nil)
	direct.close()

	viaEmu := newProber(t, tp, emuIPB, benchFlows)
	res.Passthrough = benchPhase(t, viaEmu, startEmulator(t, tp, bin))
	res.Delay25msEachWay = benchPhase(t, viaEmu, startEmulator(t, tp, bin, "-ab-delay", "25ms", "-ba-delay", "25ms"))

	res.AddedRTTP50Us = res.Passthrough.RTTP50Us - res.Direct.RTTP50Us
	res.AddedRTTP99Us = res.Passthrough.RTTP99Us - res.Direct.RTTP99Us
	res.DelayErrorP50Us = res.Delay25msEachWay.RTTP50Us - 50_000
	res.EmulatorCPUCores = res.Delay25msEachWay.EmulatorCPUCores
	res.EmulatorCPUCoresPassthrough = res.Passthrough.EmulatorCPUCores
	res.FramesDropped = res.Passthrough.FramesDropped + res.Delay25msEachWay.FramesDropped

	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	tmp := *benchOut + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatalf("-bench-out: %v", err)
	}
	if err := os.Rename(tmp, *benchOut); err != nil {
		_ = os.Remove(tmp)
		t.Fatalf("-bench-out: %v", err)
	}
	t.Logf("netemu bench:\n%s", b)
}
