package wire

import (
	"bytes"
	"errors"
	"testing"
)

func TestRoundTrips(t *testing.T) {
	h := Hello{Player: 42, Schema: SchemaVersion}
	if got, err := DecodeHello(AppendHello(nil, h)); err != nil || got != h {
		t.Fatalf("hello: %+v %v", got, err)
	}
	w := Welcome{Player: 7, Spawn: Vec3{1.5, 2, -3}, TickRateHz: 60, WorldBlocks: 40000, WorldChunks: 160}
	if got, err := DecodeWelcome(AppendWelcome(nil, w)); err != nil || got != w {
		t.Fatalf("welcome: %+v %v", got, err)
	}
	p := Probe{Kind: ProbeApp, Player: 3, Seq: 99, SentMonoNs: 123456789}
	enc := AppendProbe(nil, TProbe, p, 400)
	if len(enc) != 400 {
		t.Fatalf("probe padded to %d B, want 400", len(enc))
	}
	if got, err := DecodeProbe(enc); err != nil || got != p {
		t.Fatalf("probe: %+v %v", got, err)
	}
	if len(AppendProbe(nil, TProbe, p, 0)) != ProbeHeaderBytes {
		t.Fatal("an unpadded probe must be exactly the header")
	}
	in := Input{Player: 1, Seq: 2, Pos: Vec3{3, 4, 5}, Yaw: 0.5}
	if got, err := DecodeInput(AppendInput(nil, in)); err != nil || got != in {
		t.Fatalf("input: %+v %v", got, err)
	}
	ba := BlockAction{Action: 9, Op: OpPlace, Pos: BlockPos{-1, 2, -3}, Kind: 4}
	if got, err := DecodeBlockAction(AppendBlockAction(nil, ba)); err != nil || got != ba {
		t.Fatalf("block action: %+v %v", got, err)
	}
	ack := BlockAck{Action: 9, OK: true}
	if got, err := DecodeBlockAck(AppendBlockAck(nil, ack)); err != nil || got != ack {
		t.Fatalf("ack: %+v %v", got, err)
	}
	st := AppendStateHeader(nil, 77)
	st = AppendTransform(st, Transform{Player: 1, Pos: Vec3{1, 2, 3}, Yaw: 1})
	st = AppendTransform(st, Transform{Player: 2, Pos: Vec3{4, 5, 6}, Yaw: 2})
	FinishState(st, 2)
	s, err := DecodeState(st, nil)
	if err != nil || s.Tick != 77 || len(s.Transforms) != 2 || s.Transforms[1].Pos.Z != 6 {
		t.Fatalf("state: %+v %v", s, err)
	}
	ch := []BlockChange{{Pos: BlockPos{1, 2, 3}, Kind: 5}, {Pos: BlockPos{-4, 0, 9}, Kind: 0}}
	tick, got, err := DecodeBlockChanges(AppendBlockChanges(nil, 5, ch), nil)
	if err != nil || tick != 5 || len(got) != 2 || got[1] != ch[1] {
		t.Fatalf("block changes: %v %+v %v", tick, got, err)
	}
	wc := WorldChunk{Seq: 1, Total: 3, CX: -1, CY: 0, CZ: 2, Blocks: []ChunkBlock{{0, 1}, {4095, 255}}}
	gotWC, err := DecodeWorldChunk(AppendWorldChunk(nil, wc), nil)
	if err != nil || gotWC.CX != -1 || len(gotWC.Blocks) != 2 || gotWC.Blocks[1] != wc.Blocks[1] {
		t.Fatalf("world chunk: %+v %v", gotWC, err)
	}
	if k, err := DecodeKeepalive(AppendKeepalive(nil, 8)); err != nil || k != 8 {
		t.Fatalf("keepalive: %v %v", k, err)
	}
}

func TestRejectsHostileMessages(t *testing.T) {
	cases := map[string][]byte{
		"empty":                {},
		"unknown type":         {200, 1, 2},
		"truncated probe":      AppendProbe(nil, TProbe, Probe{}, 0)[:10],
		"bad probe kind":       append([]byte{byte(TProbe), 9}, make([]byte, 16)...),
		"state count too big":  {byte(TState), 0, 0, 0, 1, 0xff, 0xff},
		"changes count lies":   {byte(TBlockChanges), 0, 0, 0, 1, 0, 3},
		"chunk index overflow": AppendWorldChunk(nil, WorldChunk{Seq: 0, Total: 1, Blocks: []ChunkBlock{{5000, 1}}}),
		"chunk seq >= total":   AppendWorldChunk(nil, WorldChunk{Seq: 2, Total: 2}),
		"NaN position":         {byte(TInput), 0, 0, 0, 1, 0, 0, 0, 1, 0x7f, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"place kind zero":      AppendBlockAction(nil, BlockAction{Op: OpPlace}),
		"bad block op":         AppendBlockAction(nil, BlockAction{Op: 7, Kind: 1}),
	}
	for name, b := range cases {
		if err := Validate(b); err == nil {
			t.Errorf("%s: accepted % x", name, b)
		} else if !errors.Is(err, ErrShort) && !errors.Is(err, ErrType) && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %v is not one of the wire errors", name, err)
		}
	}
}

// FuzzValidate: no input may panic a decoder, and any valid probe re-encodes to the
// same header bytes (the server echoes probes by rewriting the type byte only).
func FuzzValidate(f *testing.F) {
	f.Add(AppendHello(nil, Hello{Player: 1, Schema: 1}))
	f.Add(AppendProbe(nil, TProbe, Probe{Kind: ProbeNet, Player: 1, Seq: 2, SentMonoNs: 3}, 40))
	f.Add(AppendBlockAction(nil, BlockAction{Action: 1, Op: OpPlace, Kind: 1}))
	f.Add(AppendWorldChunk(nil, WorldChunk{Seq: 0, Total: 1, Blocks: []ChunkBlock{{1, 1}}}))
	f.Add(AppendBlockChanges(nil, 1, []BlockChange{{Kind: 1}}))
	st := AppendStateHeader(nil, 1)
	st = AppendTransform(st, Transform{Player: 1})
	FinishState(st, 1)
	f.Add(st)
	f.Fuzz(func(t *testing.T, b []byte) {
		if Validate(b) != nil {
			return
		}
		if Type(b[0]) == TProbe || Type(b[0]) == TProbeEcho {
			p, _ := DecodeProbe(b)
			re := AppendProbe(nil, Type(b[0]), p, 0)
			if !bytes.Equal(re, b[:ProbeHeaderBytes]) {
				t.Fatalf("probe does not re-encode: % x vs % x", re, b[:ProbeHeaderBytes])
			}
		}
	})
}
