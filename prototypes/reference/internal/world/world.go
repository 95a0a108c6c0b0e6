// Package world is the server's voxel world: blocks in chunks of 16×16×16, with the
// snapshot a joining player receives.
package world

import (
	"math"
	"math/rand/v2"
	"sort"

	"netstick/prototypes/reference/internal/wire"
)

// ChunkSide is the side of a chunk in blocks (1 << chunkBits).
const ChunkSide = 1 << chunkBits

// ChunkKey is a chunk's coordinate (block coordinate / 16, rounded down).
type ChunkKey struct{ X, Y, Z int32 }

type chunk struct {
	blocks [ChunkSide * ChunkSide * ChunkSide]uint8
	count  int
}

// World is not safe for concurrent use; the server guards it.
type World struct {
	chunks map[ChunkKey]*chunk
	blocks int
}

// New returns an empty world.
func New() *World { return &World{chunks: map[ChunkKey]*chunk{}} }

// chunkBits is log2(ChunkSide): chunk and in-chunk index come from shifts and masks, which are
// floor division and modulo for every int32, including near math.MinInt32 where negation
// overflows.
const chunkBits = 4

func locate(p wire.BlockPos) (ChunkKey, int) {
	k := ChunkKey{p.X >> chunkBits, p.Y >> chunkBits, p.Z >> chunkBits}
	const mask = ChunkSide - 1
	lx, ly, lz := p.X&mask, p.Y&mask, p.Z&mask
	return k, int(lx + ChunkSide*(ly+ChunkSide*lz))
}

// Get returns the block kind at p (0: empty).
func (w *World) Get(p wire.BlockPos) uint8 {
	k, i := locate(p)
	if c := w.chunks[k]; c != nil {
		return c.blocks[i]
	}
	return 0
}

// Set places kind at p (0 removes) and reports whether anything changed.
func (w *World) Set(p wire.BlockPos, kind uint8) bool {
	k, i := locate(p)
	c := w.chunks[k]
	if c == nil {
		if kind == 0 {
			return false
		}
		c = &chunk{}
		w.chunks[k] = c
	}
	old := c.blocks[i]
	if old == kind {
		return false
	}
	c.blocks[i] = kind
	switch {
	case old == 0:
		c.count++
		w.blocks++
	case kind == 0:
		c.count--
		w.blocks--
		if c.count == 0 {
			delete(w.chunks, k)
		}
	}
	return true
}

// Blocks is the number of blocks in the world.
func (w *World) Blocks() int { return w.blocks }

// Generate fills the world with n blocks of terrain: columns of height 1..3 (seeded)
// in a square around the origin, like a flat Minecraft-style map, at y < 0 so that
// players stand at y = 0.
func Generate(n int, seed uint64) *World {
	w := New()
	rng := rand.New(rand.NewPCG(seed, 0x776f726c64))
	side := int32(math.Ceil(math.Sqrt(float64(n) / 2)))
	placed := 0
	for x := -side / 2; placed < n; x++ {
		for z := -side / 2; z < side-side/2 && placed < n; z++ {
			h := int32(1 + rng.IntN(3))
			for y := int32(-1); y >= -h && placed < n; y-- {
				if w.Set(wire.BlockPos{X: x, Y: y, Z: z}, uint8(1+rng.IntN(8))) {
					placed++
				}
			}
		}
	}
	return w
}

// Snapshot encodes the whole world as WorldChunk messages, one per chunk, in a stable
// order. Each message is at most 23 + 3·4096 bytes.
func (w *World) Snapshot() [][]byte {
	keys := make([]ChunkKey, 0, len(w.chunks))
	for k := range w.chunks {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.X != b.X {
			return a.X < b.X
		}
		if a.Y != b.Y {
			return a.Y < b.Y
		}
		return a.Z < b.Z
	})
	out := make([][]byte, 0, len(keys))
	blocks := make([]wire.ChunkBlock, 0, 4096)
	for i, k := range keys {
		c := w.chunks[k]
		blocks = blocks[:0]
		for idx, kind := range c.blocks {
			if kind != 0 {
				blocks = append(blocks, wire.ChunkBlock{Index: uint16(idx), Kind: kind})
			}
		}
		out = append(out, wire.AppendWorldChunk(nil, wire.WorldChunk{
			Seq: uint32(i), Total: uint32(len(keys)), CX: k.X, CY: k.Y, CZ: k.Z, Blocks: blocks,
		}))
	}
	return out
}
