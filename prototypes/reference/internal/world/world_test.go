package world

import (
	"math"
	"testing"

	"netstick/prototypes/reference/internal/wire"
)

func TestSetGetAcrossNegativeChunks(t *testing.T) {
	w := New()
	for _, p := range []wire.BlockPos{{X: 0, Y: 0, Z: 0}, {X: -1, Y: -1, Z: -1}, {X: -16, Y: 15, Z: 16}, {X: -17, Y: 0, Z: 31}} {
		if !w.Set(p, 3) || w.Get(p) != 3 {
			t.Fatalf("set/get %v", p)
		}
	}
	if w.Blocks() != 4 || w.Set(wire.BlockPos{X: 0, Y: 0, Z: 0}, 3) {
		t.Fatal("setting the same block twice must not change the world")
	}
	if !w.Set(wire.BlockPos{X: -1, Y: -1, Z: -1}, 0) || w.Blocks() != 3 || w.Get(wire.BlockPos{X: -1, Y: -1, Z: -1}) != 0 {
		t.Fatal("remove failed")
	}
}

func TestGenerateIsExactAndSeeded(t *testing.T) {
	for _, n := range []int{0, 1, 7500, 40000} {
		a, b := Generate(n, 42), Generate(n, 42)
		if a.Blocks() != n {
			t.Fatalf("Generate(%d) made %d blocks", n, a.Blocks())
		}
		sa, sb := a.Snapshot(), b.Snapshot()
		if len(sa) != len(sb) {
			t.Fatal("same seed, different worlds")
		}
		total := 0
		for i := range sa {
			if string(sa[i]) != string(sb[i]) {
				t.Fatal("same seed, different snapshots")
			}
			m, err := wire.DecodeWorldChunk(sa[i], nil)
			if err != nil {
				t.Fatal(err)
			}
			total += len(m.Blocks)
		}
		if total != n {
			t.Fatalf("snapshot carries %d blocks, want %d", total, n)
		}
	}
}

// Positions at the ends of int32 (a crafted block action) land in a chunk, never outside it.
func TestSetAtInt32Extremes(t *testing.T) {
	w := New()
	for _, v := range []int32{math.MinInt32, math.MinInt32 + 1, -17, -16, -1, 0, 15, 16, math.MaxInt32} {
		p := wire.BlockPos{X: v, Y: -v - 1, Z: v}
		if !w.Set(p, 3) {
			t.Fatalf("Set(%v) changed nothing", p)
		}
		if got := w.Get(p); got != 3 {
			t.Fatalf("Get(%v) = %d, want 3", p, got)
		}
		if !w.Set(p, 0) || w.Get(p) != 0 {
			t.Fatalf("removing %v failed", p)
		}
	}
}
