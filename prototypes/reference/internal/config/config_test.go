package config

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParsesTheContractFlags(t *testing.T) {
	c, err := Parse(strings.Fields("-role client -host 10.0.0.1 -port 9000 -players 50 -first-player 100 "+
		"-workload stream -param size=100 -param rate=30 -param t.mtu=1000 -duration 12.5 -tick-rate 30 "+
		"-log-dir /tmp/x -run-id r1 -seed 7 -probe-hz 5"), "tcp", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr() != "10.0.0.1:9000" || c.Players != 50 || c.FirstPlayer != 100 || c.Seed != 7 {
		t.Fatalf("parsed %+v", c)
	}
	if c.Duration != 12500*time.Millisecond || c.TickRateHz != 30 || c.ProbeHz != 5 {
		t.Fatalf("parsed %+v", c)
	}
	if c.Workload.Size != 100 || c.Workload.Rate != 30 || c.Workload.Params["channel"] != "reliable" {
		t.Fatalf("workload %+v", c.Workload)
	}
	if c.TransportOpts["mtu"] != "1000" {
		t.Fatalf("transport options %v", c.TransportOpts)
	}
}

func TestWorldSizeOverridesDefault(t *testing.T) {
	w, err := ParseWorkload("world", map[string]string{"size": "L"})
	if err != nil || w.Objects != 40000 || w.Params["objects"] != "40000" {
		t.Fatalf("%+v %v", w, err)
	}
	if _, err := ParseWorkload("world", map[string]string{"size": "L", "objects": "5"}); err == nil {
		t.Fatal("size and objects together accepted")
	}
}

func TestBadArgumentsNameTheFlag(t *testing.T) {
	cases := map[string]string{
		"-role server":                                                                "-log-dir",
		"-role judge -log-dir x":                                                      "-role",
		"-log-dir x":                                                                  "-role",
		"-role client -log-dir x -players 0":                                          "-players",
		"-role client -log-dir x -port 70000":                                         "-port",
		"-role client -log-dir x -seed -3":                                            "-seed",
		"-role client -log-dir x -workload dance":                                     "-workload",
		"-role client -log-dir x -param size":                                         "key=value",
		"-role client -log-dir x -param size=10":                                      "workload idle takes no parameters",
		"-role client -log-dir x -bogus 1":                                            "bogus",
		"-role client -log-dir x -duration -1":                                        "-duration",
		"-role client -log-dir x -tick-rate 0":                                        "-tick-rate",
		"-role client -log-dir x -workload stream -param size=5":                      "size=5",
		"-role client -log-dir x -workload stream -param channel=maybe":               "channel=maybe",
		"-role client -log-dir x -workload active -param blocks=x":                    "blocks=x",
		"-role client -log-dir x -workload envmod -param speed=1":                     "expected one of blocks, interval, interval_change",
		"-role client -log-dir x -workload world -param size=XL":                      "S, M or L",
		"-role client -log-dir x stray":                                               "stray",
		"-role server -log-dir x -plant-cpu-ns-per-msg -5":                            "-plant-cpu-ns-per-msg",
		"-role server -log-dir x -plant-cpu-ns-per-msg 1e9":                           "-plant-cpu-ns-per-msg",
		"-role server -log-dir x -plant-iterations-per-msg -1":                        "-plant-iterations-per-msg",
		"-role server -log-dir x -plant-iterations-per-msg 9999999999":                "-plant-iterations-per-msg",
		"-role server -log-dir x -plant-iterations-per-msg 5 -plant-cpu-ns-per-msg 5": "at most one",
	}
	for args, want := range cases {
		_, err := Parse(strings.Fields(args), "tcp", io.Discard)
		if err == nil {
			t.Errorf("%q: accepted", args)
			continue
		}
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %q does not name %q", args, err, want)
		}
	}
}

// CONTRACT.md §1: a flag of the other role is accepted and ignored (one argument list may
// start both roles), and --flag is the same flag as -flag.
func TestOtherRolesFlagsAndDoubleDash(t *testing.T) {
	c, err := Parse(strings.Fields("-role server -log-dir x -players 5 -first-player 3 "+
		"-probe-hz 0 -connect-timeout-s 2 --port 9000 --tick-rate=30"), "tcp", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Role != "server" || c.Port != 9000 || c.TickRateHz != 30 {
		t.Fatalf("parsed %+v", c)
	}
	if _, err := Parse(strings.Fields("-role server -log-dir x --frobnicate 1"), "tcp", io.Discard); !errors.Is(err, ErrUsage) {
		t.Fatalf("an unknown double-dash flag: %v", err)
	}
}
