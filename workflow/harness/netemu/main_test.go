package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseArgsValid(t *testing.T) {
	c, err := parseArgs([]string{
		"-a", "ema", "-b", "emb", "-ab-delay", "25ms", "-ab-jitter", "5ms", "-ab-dist", "uniform",
		"-ab-loss", "0.1", "-ab-loss-corr", "0.25", "-ba-ge-p", "0.01", "-ba-ge-r", "0.25",
		"-ba-rate-bps", "10e6", "-ba-queue-ms", "20", "-ba-reorder", "-seed", "7", "-duration", "3s",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.AB.Delay != 25*time.Millisecond || c.AB.Dist != DistUniform || c.AB.LossCorr != 0.25 || c.AB.GE {
		t.Errorf("ab parsed as %+v", c.AB)
	}
	if !c.BA.GE || c.BA.GEH != 1 || c.BA.GEK != 0 || c.BA.RateBps != 10e6 || c.BA.QueueMs != 20 || !c.BA.Reorder {
		t.Errorf("ba parsed as %+v", c.BA)
	}
	if c.AB.QueueMs != 50 || c.Seed != 7 || c.Duration != 3*time.Second {
		t.Errorf("defaults/globals parsed as queue=%v seed=%d duration=%v", c.AB.QueueMs, c.Seed, c.Duration)
	}
	imAB, imBA := newImpairment(&c.AB, c.Seed, 0), newImpairment(&c.BA, c.Seed, 1)
	if _, ok := imAB.Loss.(*CorrelatedLoss); !ok || imAB.Order == nil || imAB.Rate != nil {
		t.Errorf("ab impairment %+v", imAB)
	}
	if _, ok := imBA.Loss.(*GilbertElliott); !ok || imBA.Order != nil || imBA.Rate == nil || imBA.Rate.QueueNs != 20e6 {
		t.Errorf("ba impairment %+v", imBA)
	}
	if p := dirParams(&c.BA, imBA); p.Mode != "scheduled" || p.Loss != 0 || p.GEP != 0.01 {
		t.Errorf("ba params %+v", p)
	}
	pass, _ := parseArgs([]string{"-a", "x", "-b", "y"}, io.Discard)
	if im := newImpairment(&pass.AB, 1, 0); im.NeedsScheduler() || im.Loss != nil {
		t.Error("no impairment flags must give a direct pass-through direction")
	}
}

func TestParseArgsErrorsNameTheFlag(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-b", "emb"}, "-a and -b"},
		{[]string{"-a", "x", "-b", "x"}, "two different interfaces"},
		{[]string{"-a", "x", "-b", "y", "-ab-loss", "1.5"}, "-ab-loss: expected a probability in [0,1]"},
		{[]string{"-a", "x", "-b", "y", "-ba-loss-corr", "-0.1"}, "-ba-loss-corr: expected a probability"},
		{[]string{"-a", "x", "-b", "y", "-ab-loss", "NaN"}, "-ab-loss: expected a probability"},
		{[]string{"-a", "x", "-b", "y", "-ab-loss", "0.05", "-ab-ge-p", "0.01", "-ab-ge-r", "0.2"}, "mutually exclusive"},
		{[]string{"-a", "x", "-b", "y", "-ba-ge-h", "0.5"}, "-ba-ge-p: expected a probability in (0,1]"},
		{[]string{"-a", "x", "-b", "y", "-ab-ge-p", "0.01"}, "-ab-ge-r: expected a probability in (0,1]"},
		{[]string{"-a", "x", "-b", "y", "-ab-dist", "pareto"}, "expected normal or uniform"},
		{[]string{"-a", "x", "-b", "y", "-ab-delay", "-1ms"}, "-ab-delay: expected a duration >= 0"},
		{[]string{"-a", "x", "-b", "y", "-ba-jitter", "-1ms"}, "-ba-jitter: expected a duration >= 0"},
		{[]string{"-a", "x", "-b", "y", "-ab-rate-bps", "-5"}, "-ab-rate-bps: expected bits per second"},
		{[]string{"-a", "x", "-b", "y", "-ab-queue-ms", "0"}, "-ab-queue-ms: expected milliseconds > 0"},
		{[]string{"-a", "x", "-b", "y", "-duration", "-1s"}, "-duration: expected a duration >= 0"},
		{[]string{"-a", "x", "-b", "y", "-stats-out", filepath.Join(dir, "nope", "s.json")}, "-stats-out"},
		{[]string{"-a", "x", "-b", "y", "extra"}, `unexpected argument "extra"`},
		{[]string{"-a", "x", "-b", "y", "-ab-delay", "soon"}, "-ab-delay"},
		{[]string{"-a", "x", "-b", "y", "-no-such-flag"}, "no-such-flag"},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		_, err := parseArgs(c.args, &stderr)
		if err == nil {
			t.Errorf("%v: no error, want one containing %q", c.args, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %q, want it to contain %q", c.args, err, c.want)
		}
	}
}

func TestRunExitCodes(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-a", "x", "-b", "y", "-ab-loss", "2"}, &out, &errb); code != exitFlags {
		t.Errorf("bad flag: exit %d, want %d (stderr %q)", code, exitFlags, errb.String())
	}
	errb.Reset()
	if code := run([]string{"-h"}, &out, &errb); code != exitOK || !strings.Contains(errb.String(), "-ab-delay") {
		t.Errorf("-h: exit %d, want 0 with usage naming -ab-delay", code)
	}
	errb.Reset()
	code := run([]string{"-a", "netemu-test-no-such-if", "-b", "y"}, &out, &errb)
	if code != exitLink || !strings.Contains(errb.String(), "-a: cannot open interface") {
		t.Errorf("missing interface: exit %d stderr %q, want %d naming -a", code, errb.String(), exitLink)
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q before READY, want nothing", out.String())
	}
}

func TestWriteReportAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stats.json")
	r := &Report{Schema: reportSchema, A: "ema", B: "emb"}
	r.AB.FramesIn = 3
	if err := writeReport(r, path, io.Discard); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte(`"frames_in": 3`)) {
		t.Fatalf("report %s: %v %s", path, err, b)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
