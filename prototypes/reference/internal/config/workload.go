package config

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/wire"
)

// Workload is a validated workload with every parameter filled in.
type Workload struct {
	Name           string
	Blocks         int     // active, envmod
	Interval       float64 // active, envmod, rpc-toggle: seconds
	IntervalChange float64 // envmod: seconds
	Continuous     bool    // active
	Speed          float64 // wander: m/s
	Area           float64 // wander: m
	Objects        int     // world
	Size           int     // stream, pingpong: bytes
	Rate           float64 // stream: Hz
	Channel        transport.Channel
	Count          int // pingpong
	// Params is every parameter with defaults applied, as recorded in the metadata.
	Params map[string]string
}

// paramSpec is one parameter: its default and how to check and store it.
type paramSpec struct {
	def   string
	apply func(w *Workload, v string) error
}

func intIn(key string, lo, hi int, dst func(*Workload) *int) func(*Workload, string) error {
	return func(w *Workload, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return usageErr("-param %s=%s (workload %s): expected an integer in [%d, %d]", key, v, w.Name, lo, hi)
		}
		*dst(w) = n
		return nil
	}
}

func floatIn(key string, lo, hi float64, loOpen bool, dst func(*Workload) *float64) func(*Workload, string) error {
	return func(w *Workload, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		bad := err != nil || math.IsNaN(f) || f > hi || f < lo || (loOpen && f == lo)
		if bad {
			open := "["
			if loOpen {
				open = "("
			}
			return usageErr("-param %s=%s (workload %s): expected a number in %s%g, %g]", key, v, w.Name, open, lo, hi)
		}
		*dst(w) = f
		return nil
	}
}

func boolParam(key string, dst func(*Workload) *bool) func(*Workload, string) error {
	return func(w *Workload, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return usageErr("-param %s=%s (workload %s): expected true or false", key, v, w.Name)
		}
		*dst(w) = b
		return nil
	}
}

func channelParam(w *Workload, v string) error {
	switch v {
	case "reliable":
		w.Channel = transport.Reliable
	case "unreliable":
		w.Channel = transport.Unreliable
	default:
		return usageErr("-param channel=%s (workload %s): expected reliable or unreliable", v, w.Name)
	}
	return nil
}

// WorldSizes are the Envirostick world sizes (Table 1 of the thesis).
var WorldSizes = map[string]int{"S": 7500, "M": 17500, "L": 40000}

const maxMessage = 1 << 20

var workloads = map[string]map[string]paramSpec{
	"idle": {},
	"active": {
		"blocks":     {"10", intIn("blocks", 1, 1_000_000, func(w *Workload) *int { return &w.Blocks })},
		"interval":   {"1.0", floatIn("interval", 0, 3600, true, func(w *Workload) *float64 { return &w.Interval })},
		"continuous": {"false", boolParam("continuous", func(w *Workload) *bool { return &w.Continuous })},
	},
	"wander": {
		"speed": {"4.0", floatIn("speed", 0, 1000, false, func(w *Workload) *float64 { return &w.Speed })},
		"area":  {"64", floatIn("area", 0, 100000, true, func(w *Workload) *float64 { return &w.Area })},
	},
	"world": {
		"objects": {"7500", intIn("objects", 0, 10_000_000, func(w *Workload) *int { return &w.Objects })},
		"size": {"", func(w *Workload, v string) error {
			if v == "" {
				return nil
			}
			n, ok := WorldSizes[v]
			if !ok {
				return usageErr("-param size=%s (workload world): expected S, M or L", v)
			}
			w.Objects = n
			return nil
		}},
	},
	"envmod": {
		"blocks":          {"300", intIn("blocks", 1, 100_000, func(w *Workload) *int { return &w.Blocks })},
		"interval":        {"0.4", floatIn("interval", 0, 3600, true, func(w *Workload) *float64 { return &w.Interval })},
		"interval_change": {"0.004", floatIn("interval_change", 0, 3600, false, func(w *Workload) *float64 { return &w.IntervalChange })},
	},
	"rpc-toggle": {
		"interval": {"0.2", floatIn("interval", 0, 3600, true, func(w *Workload) *float64 { return &w.Interval })},
	},
	"stream": {
		"size":    {"400", intIn("size", wire.ProbeHeaderBytes, maxMessage, func(w *Workload) *int { return &w.Size })},
		"rate":    {"60", floatIn("rate", 0, 1000, true, func(w *Workload) *float64 { return &w.Rate })},
		"channel": {"reliable", channelParam},
	},
	"pingpong": {
		"count":   {"1000", intIn("count", 1, 100_000_000, func(w *Workload) *int { return &w.Count })},
		"size":    {"100", intIn("size", wire.ProbeHeaderBytes, maxMessage, func(w *Workload) *int { return &w.Size })},
		"channel": {"reliable", channelParam},
	},
}

// WorkloadNames lists the contract's workloads.
func WorkloadNames() []string {
	names := make([]string, 0, len(workloads))
	for n := range workloads {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ParseWorkload validates name and params and fills in defaults.
func ParseWorkload(name string, params map[string]string) (Workload, error) {
	specs, ok := workloads[name]
	if !ok {
		return Workload{}, usageErr("-workload %q: expected one of %s", name, strings.Join(WorkloadNames(), ", "))
	}
	w := Workload{Name: name, Channel: transport.Unreliable, Params: map[string]string{}}
	keys := make([]string, 0, len(specs))
	for k := range specs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for k := range params {
		if _, ok := specs[k]; !ok {
			if len(keys) == 0 {
				return w, usageErr("-param %s: workload %s takes no parameters", k, name)
			}
			return w, usageErr("-param %s: unknown for workload %s (expected one of %s)", k, name, strings.Join(keys, ", "))
		}
	}
	if name == "world" {
		if _, both := params["size"]; both {
			if _, alsoObjects := params["objects"]; alsoObjects {
				return w, usageErr("-param size and -param objects (workload world): give one, not both")
			}
		}
	}
	// objects before size, so size overrides the objects default.
	slices.SortFunc(keys, func(a, b string) int {
		if a == "size" && name == "world" {
			return 1
		}
		if b == "size" && name == "world" {
			return -1
		}
		return strings.Compare(a, b)
	})
	for _, k := range keys {
		v, given := params[k]
		if !given {
			v = specs[k].def
		}
		if err := specs[k].apply(&w, v); err != nil {
			return w, err
		}
		if v != "" {
			w.Params[k] = v
		}
	}
	if name == "world" {
		w.Params["objects"] = strconv.Itoa(w.Objects)
	}
	return w, nil
}

// String describes the workload for logs.
func (w Workload) String() string {
	keys := make([]string, 0, len(w.Params))
	for k := range w.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{w.Name}
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%s", k, w.Params[k]))
	}
	return strings.Join(parts, " ")
}
