package main

// Counters of one direction and the final JSON report (-stats-out).

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// DirStats are updated by the direction's receiving and sending threads.
type DirStats struct {
	FramesIn, BytesIn   atomic.Uint64
	FramesOut, BytesOut atomic.Uint64
	NonIPIn, NonIPOut   atomic.Uint64
	DroppedLoss         atomic.Uint64
	DroppedQueue        atomic.Uint64
	SendErrors          atomic.Uint64
	threadCPUNs         atomic.Int64
	// Late is written by the sending thread only and read after it has stopped.
	Late LateHist

	firstSendErr sync.Once
}

// LateHist is a histogram of how late frames left after their departure time: 1 µs
// buckets below 1 ms, 100 µs buckets up to 101 ms, then one overflow bucket. It tells
// the harness whether the emulator kept its schedule, separately from the lateness
// of the endpoints and the kernel (a busy machine shows up here first).
type LateHist struct {
	fine   [1000]uint64
	coarse [1000]uint64
	over   uint64
	n      uint64
	maxNs  int64
}

func (h *LateHist) Add(ns int64) {
	ns = max(ns, 0)
	h.n++
	h.maxNs = max(h.maxNs, ns)
	switch us := ns / 1000; {
	case us < 1000:
		h.fine[us]++
	case us < 101_000:
		h.coarse[(us-1000)/100]++
	default:
		h.over++
	}
}

// QuantileUs returns the upper edge of the bucket holding quantile q (0 if empty).
func (h *LateHist) QuantileUs(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q * float64(h.n))
	if rank >= h.n {
		rank = h.n - 1
	}
	var seen uint64
	for i, c := range h.fine {
		if seen += c; seen > rank {
			return float64(i + 1)
		}
	}
	for i, c := range h.coarse {
		if seen += c; seen > rank {
			return float64(1000 + 100*(i+1))
		}
	}
	return float64(h.maxNs) / 1e3
}

// addThreadCPU adds the calling OS thread's CPU time (user + system) to the
// direction. Each forwarding goroutine is locked to its own thread and calls this
// just before it exits, so the sum is the direction's cost, excluding the Go runtime's
// shared work (GC, sysmon), which only the process total includes.
func (s *DirStats) addThreadCPU() {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) == nil {
		s.threadCPUNs.Add(ru.Utime.Nano() + ru.Stime.Nano())
	}
}

// DirParams echoes the effective impairment of a direction into the report.
type DirParams struct {
	Mode     string  `json:"mode"` // "direct": forwarded by the receiving thread; "scheduled": via the departure heap
	DelayUs  float64 `json:"delay_us"`
	JitterUs float64 `json:"jitter_us"`
	Dist     string  `json:"dist"`
	Reorder  bool    `json:"reorder"`
	Loss     float64 `json:"loss"`
	LossCorr float64 `json:"loss_corr"`
	GEP      float64 `json:"ge_p"`
	GER      float64 `json:"ge_r"`
	GEH      float64 `json:"ge_h"`
	GEK      float64 `json:"ge_k"`
	RateBps  float64 `json:"rate_bps"`
	QueueMs  float64 `json:"queue_ms"`
}

// DirReport is one direction in the report. Every frame read is accounted for:
// frames_in = frames_out + dropped_loss + dropped_queue + send_errors + in_flight_at_stop.
// dropped_socket counts frames the kernel dropped before the emulator read them (full
// receive buffer); they are not in frames_in.
type DirReport struct {
	Params         DirParams `json:"params"`
	FramesIn       uint64    `json:"frames_in"`
	BytesIn        uint64    `json:"bytes_in"`
	FramesOut      uint64    `json:"frames_out"`
	BytesOut       uint64    `json:"bytes_out"`
	NonIPFramesIn  uint64    `json:"non_ip_frames_in"`
	NonIPFramesOut uint64    `json:"non_ip_frames_out"`
	DroppedLoss    uint64    `json:"dropped_loss"`
	DroppedQueue   uint64    `json:"dropped_queue"`
	DroppedSocket  uint64    `json:"dropped_socket"`
	SendErrors     uint64    `json:"send_errors"`
	InFlightAtStop uint64    `json:"in_flight_at_stop"`
	// MaxQueueFrames is the most frames this direction held at once (rate queue and
	// delay line together); 0 in direct mode.
	MaxQueueFrames uint64 `json:"max_queue_frames"`
	// DepartLate*: how late frames left after their departure time (scheduled mode
	// only; bucket upper edges, 1 µs resolution below 1 ms, 100 µs above).
	DepartLateP50Us float64 `json:"depart_late_p50_us"`
	DepartLateP99Us float64 `json:"depart_late_p99_us"`
	DepartLateMaxUs float64 `json:"depart_late_max_us"`
	// CPUS is the CPU time of this direction's own threads (getrusage RUSAGE_THREAD).
	CPUS float64 `json:"cpu_s"`
}

// Report is the whole -stats-out document.
type Report struct {
	Schema     string    `json:"schema"`
	A          string    `json:"a"`
	B          string    `json:"b"`
	Seed       uint64    `json:"seed"`
	StopReason string    `json:"stop_reason"`
	WallS      float64   `json:"wall_s"`
	CPUS       float64   `json:"cpu_s"` // whole process, getrusage RUSAGE_SELF
	CPUUserS   float64   `json:"cpu_user_s"`
	CPUSysS    float64   `json:"cpu_sys_s"`
	MaxRSSKB   int64     `json:"max_rss_kb"`
	AB         DirReport `json:"ab"`
	BA         DirReport `json:"ba"`
}

const reportSchema = "netstick.netemu.stats.v1"

// report snapshots the counters; lateOK is false when the sending thread may still be
// running (its histogram is then left out rather than read while written).
func (s *DirStats) report(p DirParams, inFlight, maxQueue, socketDrops uint64, lateOK bool) DirReport {
	r := DirReport{
		Params:         p,
		FramesIn:       s.FramesIn.Load(),
		BytesIn:        s.BytesIn.Load(),
		FramesOut:      s.FramesOut.Load(),
		BytesOut:       s.BytesOut.Load(),
		NonIPFramesIn:  s.NonIPIn.Load(),
		NonIPFramesOut: s.NonIPOut.Load(),
		DroppedLoss:    s.DroppedLoss.Load(),
		DroppedQueue:   s.DroppedQueue.Load(),
		DroppedSocket:  socketDrops,
		SendErrors:     s.SendErrors.Load(),
		InFlightAtStop: inFlight,
		MaxQueueFrames: maxQueue,
		CPUS:           float64(s.threadCPUNs.Load()) / 1e9,
	}
	if lateOK {
		r.DepartLateP50Us = s.Late.QuantileUs(0.5)
		r.DepartLateP99Us = s.Late.QuantileUs(0.99)
		r.DepartLateMaxUs = float64(s.Late.maxNs) / 1e3
	}
	return r
}

// fillProcessUsage adds the whole process's CPU and peak RSS.
func (r *Report) fillProcessUsage() {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return
	}
	r.CPUUserS = float64(ru.Utime.Nano()) / 1e9
	r.CPUSysS = float64(ru.Stime.Nano()) / 1e9
	r.CPUS = r.CPUUserS + r.CPUSysS
	r.MaxRSSKB = ru.Maxrss
}

// writeReport writes the report to path atomically (temporary file + rename), so a
// reader never sees half a document; path "" prints it to stdout instead.
func writeReport(r *Report, path string, stdout io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode stats: %w", err)
	}
	b = append(b, '\n')
	if path == "" {
		_, err = stdout.Write(b)
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("-stats-out %s: %w", path, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // no-op after a successful rename
	// CreateTemp makes the file 0600; the harness's readers need not be root.
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("-stats-out %s: %w", path, err)
	}
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("-stats-out %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("-stats-out %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("-stats-out %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("-stats-out %s: %w", path, err)
	}
	return nil
}
