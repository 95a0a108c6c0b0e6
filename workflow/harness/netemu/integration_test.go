package main

import (
	"math"
	"testing"
	"time"
)

// checkCounts asserts that the emulator's counters account exactly for the probes:
// every probe the prober sent is an IP frame in ab, every echo the server sent is an IP
// frame in ba, and the frames each direction forwarded are the ones that arrived.
func checkCounts(t *testing.T, rep *Report, sentAll, echoed, receivedAll int) {
	t.Helper()
	ab, ba := rep.AB, rep.BA
	if got := ipIn(ab); got != uint64(sentAll) {
		t.Errorf("ab: %d IP frames in, want the %d probes sent", got, sentAll)
	}
	if got := ipIn(ba); got != uint64(echoed) {
		t.Errorf("ba: %d IP frames in, want the %d echoes the server sent", got, echoed)
	}
	if got := ipOut(ba); got != uint64(receivedAll) {
		t.Errorf("ba: %d IP frames out, want the %d echoes the prober received", got, receivedAll)
	}
	if got := ipOut(ab); got != uint64(echoed) {
		t.Errorf("ab: %d IP frames out, want the %d probes the server echoed", got, echoed)
	}
	for name, d := range map[string]DirReport{"ab": ab, "ba": ba} {
		if d.FramesIn != d.FramesOut+d.DroppedLoss+d.DroppedQueue+d.SendErrors+d.InFlightAtStop {
			t.Errorf("%s: frames_in %d != out %d + loss %d + queue %d + send errors %d + in flight %d",
				name, d.FramesIn, d.FramesOut, d.DroppedLoss, d.DroppedQueue, d.SendErrors, d.InFlightAtStop)
		}
		if d.DroppedSocket != 0 || d.SendErrors != 0 {
			t.Errorf("%s: dropped_socket %d, send_errors %d; want 0", name, d.DroppedSocket, d.SendErrors)
		}
		// Probes were drained before the stop (the IP counts above match), but an ARP
		// frame of the neighbours' periodic reconfirmation may still be in the delay line.
		if d.InFlightAtStop > d.NonIPFramesIn {
			t.Errorf("%s: %d frames in flight at stop, more than its %d non-IP frames", name,
				d.InFlightAtStop, d.NonIPFramesIn)
		}
		if d.BytesIn < d.FramesIn*42 || d.CPUS <= 0 {
			t.Errorf("%s: bytes_in %d for %d frames or cpu_s %v implausible", name, d.BytesIn, d.FramesIn, d.CPUS)
		}
	}
}

// TestIntegration runs the emulator between two namespaces and checks delay, loss,
// pass-through overhead against a direct veth, and its counters. About 15 s.
func TestIntegration(t *testing.T) {
	requireRootAndIP(t)
	tp := setupTopology(t)
	bin := buildEmulator(t)
	srv := startEcho(t, tp)
	const flows = 10
	viaEmu := newProber(t, tp, emuIPB, flows)
	direct := newProber(t, tp, directIPB, flows)

	t.Run("pass-through adds at most 0.3 ms to p50 RTT", func(t *testing.T) {
		emu := startEmulator(t, tp, bin)
		// Alternate blocks, so drift in the machine's load affects both alike.
		var dRTT, eRTT []float64
		sentAll, recvAll, echoed := 0, 0, 0
		for range 3 {
			d := direct.run(50, 500, 1000, 100*time.Millisecond)
			dRTT = append(dRTT, d.RTTsUs...)
			e1 := srv.echoed.Load()
			r := viaEmu.run(50, 500, 1000, 100*time.Millisecond)
			eRTT = append(eRTT, r.RTTsUs...)
			sentAll += r.SentAll
			recvAll += r.ReceivedAll
			echoed += int(srv.echoed.Load() - e1) // echoes of the emulated path only
			if r.Received != r.Sent || d.Received != d.Sent {
				t.Errorf("lost probes without impairment: via emulator %d/%d, direct %d/%d",
					r.Sent-r.Received, r.Sent, d.Sent-d.Received, d.Sent)
			}
		}
		rep := emu.stop(t)
		dP50, eP50 := pct(dRTT, 0.5), pct(eRTT, 0.5)
		t.Logf("RTT p50/p99: direct %.0f/%.0f µs, through netemu %.0f/%.0f µs (added p50 %.0f µs); netemu cpu_s %.3f",
			dP50, pct(dRTT, 0.99), eP50, pct(eRTT, 0.99), eP50-dP50, rep.CPUS)
		if eP50-dP50 > 300 {
			t.Errorf("pass-through adds %.0f µs to the p50 RTT, want <= 300", eP50-dP50)
		}
		if rep.AB.Params.Mode != "direct" || rep.BA.Params.Mode != "direct" {
			t.Errorf("modes %q/%q, want direct for pass-through", rep.AB.Params.Mode, rep.BA.Params.Mode)
		}
		checkCounts(t, rep, sentAll, echoed, recvAll)
	})

	t.Run("25 ms each way gives a 50 ms p50 RTT", func(t *testing.T) {
		emu := startEmulator(t, tp, bin, "-ab-delay", "25ms", "-ba-delay", "25ms")
		e0 := srv.echoed.Load()
		r := viaEmu.run(100, 1500, 1000, 200*time.Millisecond)
		echoed := int(srv.echoed.Load() - e0)
		rep := emu.stop(t)
		p50 := pct(r.RTTsUs, 0.5) / 1e3
		t.Logf("RTT p50 %.3f ms, p99 %.3f ms over %d probes; max_queue_frames ab %d; emulator departure lateness p50/p99 ab %.0f/%.0f µs, ba %.0f/%.0f µs",
			p50, pct(r.RTTsUs, 0.99)/1e3, r.Received, rep.AB.MaxQueueFrames,
			rep.AB.DepartLateP50Us, rep.AB.DepartLateP99Us, rep.BA.DepartLateP50Us, rep.BA.DepartLateP99Us)
		if rep.AB.DepartLateP50Us <= 0 || rep.AB.DepartLateMaxUs < rep.AB.DepartLateP99Us {
			t.Errorf("ab departure lateness p50 %v p99 %v max %v: want a filled histogram", rep.AB.DepartLateP50Us,
				rep.AB.DepartLateP99Us, rep.AB.DepartLateMaxUs)
		}
		if math.Abs(p50-50) > 0.5 {
			t.Errorf("RTT p50 %.3f ms, want 50 ± 0.5 ms", p50)
		}
		if r.Received != r.Sent {
			t.Errorf("%d of %d probes lost with delay only", r.Sent-r.Received, r.Sent)
		}
		if rep.AB.Params.Mode != "scheduled" || rep.AB.MaxQueueFrames < 10 {
			t.Errorf("ab mode %q max_queue_frames %d, want scheduled and about 25 (25 ms at 1 kHz)",
				rep.AB.Params.Mode, rep.AB.MaxQueueFrames)
		}
		checkCounts(t, rep, r.SentAll, echoed, r.ReceivedAll)
	})

	t.Run("5 % loss each way loses 9.75 % of echoes", func(t *testing.T) {
		emu := startEmulator(t, tp, bin, "-ab-loss", "0.05", "-ba-loss", "0.05", "-seed", "42")
		e0 := srv.echoed.Load()
		r := viaEmu.run(0, 4500, 2500, 200*time.Millisecond)
		echoed := int(srv.echoed.Load() - e0)
		rep := emu.stop(t)
		loss := 100 * r.lossFrac()
		t.Logf("echo loss %.2f %% over %d probes (emulator dropped %d of %d ab, %d of %d ba)",
			loss, r.Sent, rep.AB.DroppedLoss, ipIn(rep.AB), rep.BA.DroppedLoss, ipIn(rep.BA))
		if r.Sent < 4000 || math.Abs(loss-9.75) > 2 {
			t.Errorf("echo loss %.2f %% over %d probes, want 9.75 ± 2 %% over >= 4000", loss, r.Sent)
		}
		if rep.AB.NonIPFramesIn != rep.AB.NonIPFramesOut || rep.BA.NonIPFramesIn != rep.BA.NonIPFramesOut {
			t.Errorf("non-IP frames lost (ARP must be spared): ab %d->%d, ba %d->%d", rep.AB.NonIPFramesIn,
				rep.AB.NonIPFramesOut, rep.BA.NonIPFramesIn, rep.BA.NonIPFramesOut)
		}
		checkCounts(t, rep, r.SentAll, echoed, r.ReceivedAll)
	})

	t.Run("rate limit holds 1 Mbit/s and tail-drops the excess", func(t *testing.T) {
		emu := startEmulator(t, tp, bin, "-ab-rate-bps", "1e6", "-ab-queue-ms", "20")
		e0 := srv.echoed.Load()
		// 2000 frames/s of 142 B (100 B payload + UDP/IPv4/Ethernet) = 2.27 Mbit/s offered.
		r := viaEmu.run(0, 2000, 2000, 200*time.Millisecond)
		echoed := int(srv.echoed.Load() - e0)
		rep := emu.stop(t)
		// The link drains its last <= 20 ms of queue after the 1 s of sending.
		mbps := float64(rep.AB.BytesOut*8) / 1.02 / 1e6
		t.Logf("ab: %.3f Mbit/s out, %d dropped by the queue, %d forwarded; RTT p99 %.1f ms",
			mbps, rep.AB.DroppedQueue, rep.AB.FramesOut, pct(r.RTTsUs, 0.99)/1e3)
		if math.Abs(mbps-1) > 0.05 || rep.AB.DroppedQueue < 800 {
			t.Errorf("ab rate %.3f Mbit/s with %d queue drops, want 1 ± 0.05 Mbit/s and about 1100 drops",
				mbps, rep.AB.DroppedQueue)
		}
		if p99 := pct(r.RTTsUs, 0.99) / 1e3; p99 > 25 {
			t.Errorf("RTT p99 %.1f ms, want at most the 20 ms queue plus the path (25 ms)", p99)
		}
		checkCounts(t, rep, r.SentAll, echoed, r.ReceivedAll)
	})

	t.Run("no path bypasses the emulator", func(t *testing.T) {
		r := viaEmu.run(0, 30, 100, 200*time.Millisecond)
		if r.Received != 0 {
			t.Errorf("%d echoes arrived with no emulator running, want 0", r.Received)
		}
	})
}
