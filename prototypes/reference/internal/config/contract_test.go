package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The contract's workloads as data (prototypes/contract/workloads.schema.json): campaign planning
// validates parameters against it, so this prototype must accept exactly what it allows.
type contractParam struct {
	Ref              string   `json:"$ref"`
	Type             string   `json:"type"`
	Minimum          *float64 `json:"minimum"`
	Maximum          *float64 `json:"maximum"`
	ExclusiveMinimum *float64 `json:"exclusiveMinimum"`
	Enum             []any    `json:"enum"`
	Default          any      `json:"default"`
}

type contractDoc struct {
	Defs      map[string]contractParam `json:"$defs"`
	Workloads map[string]struct {
		Properties map[string]contractParam `json:"properties"`
	} `json:"workloads"`
}

func loadContract(t *testing.T) contractDoc {
	t.Helper()
	path := filepath.Join("..", "..", "..", "contract", "workloads.schema.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var doc contractDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return doc
}

// resolved merges a $ref'd definition under the parameter's own keys.
func (d contractDoc) resolved(p contractParam) contractParam {
	if p.Ref == "" {
		return p
	}
	base := d.Defs[p.Ref[strings.LastIndex(p.Ref, "/")+1:]]
	if p.Default != nil {
		base.Default = p.Default
	}
	return base
}

func text(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	default:
		return x.(string)
	}
}

func accepts(name, key, value string) bool {
	_, err := ParseWorkload(name, map[string]string{key: value})
	return err == nil
}

func TestWorkloadsAgreeWithTheContractSchema(t *testing.T) {
	doc := loadContract(t)
	names := make([]string, 0, len(doc.Workloads))
	for n := range doc.Workloads {
		names = append(names, n)
	}
	slices.Sort(names)
	if got := WorkloadNames(); !slices.Equal(got, names) {
		t.Fatalf("workloads: prototype %v, contract %v", got, names)
	}
	for name, wl := range doc.Workloads {
		w, err := ParseWorkload(name, nil)
		if err != nil {
			t.Fatalf("%s with defaults: %v", name, err)
		}
		if accepts(name, "no_such_param", "1") {
			t.Errorf("%s: accepts an unknown parameter", name)
		}
		for key, raw := range wl.Properties {
			p := doc.resolved(raw)
			if p.Default != nil {
				got, err := strconv.ParseFloat(w.Params[key], 64)
				want, errWant := strconv.ParseFloat(text(p.Default), 64)
				if err == nil && errWant == nil {
					if got != want {
						t.Errorf("%s.%s default: prototype %s, contract %v", name, key, w.Params[key], p.Default)
					}
				} else if w.Params[key] != text(p.Default) {
					t.Errorf("%s.%s default: prototype %q, contract %v", name, key, w.Params[key], p.Default)
				}
			}
			for _, v := range p.Enum {
				if !accepts(name, key, text(v)) {
					t.Errorf("%s.%s=%v: allowed by the contract, refused by the prototype", name, key, v)
				}
			}
			if p.Enum != nil && accepts(name, key, "not-a-value") {
				t.Errorf("%s.%s: accepts a value outside %v", name, key, p.Enum)
			}
			if p.Type == "boolean" {
				for v, ok := range map[string]bool{"true": true, "false": true, "maybe": false} {
					if accepts(name, key, v) != ok {
						t.Errorf("%s.%s=%s: contract says allowed=%v", name, key, v, ok)
					}
				}
			}
			checkBounds(t, name, key, p)
		}
	}
}

func checkBounds(t *testing.T, name, key string, p contractParam) {
	t.Helper()
	step := 1e-6
	if p.Type == "integer" {
		step = 1
	}
	format := func(f float64) string {
		if p.Type == "integer" {
			return strconv.FormatInt(int64(f), 10)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	check := func(v float64, want bool) {
		if got := accepts(name, key, format(v)); got != want {
			t.Errorf("%s.%s=%s: prototype allowed=%v, contract allowed=%v", name, key, format(v), got, want)
		}
	}
	if p.Minimum != nil {
		check(*p.Minimum, true)
		check(*p.Minimum-step, false)
	}
	if p.ExclusiveMinimum != nil {
		check(*p.ExclusiveMinimum, false)
		check(*p.ExclusiveMinimum+step, true)
	}
	if p.Maximum != nil {
		check(*p.Maximum, true)
		check(*p.Maximum+step, false)
	}
}
