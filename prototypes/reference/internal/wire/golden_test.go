package wire

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The golden bytes of every message type, shared with the C# codec of prototypes/unity
// (Netstick.Core/Wire.cs and its tests read the same file), so both encoders are held to one
// wire format. `go test ./internal/wire -run Golden -update` rewrites the file from this encoder.
var update = flag.Bool("update", false, "rewrite prototypes/contract/wire-golden.json from the Go encoder")

var goldenPath = filepath.Join("..", "..", "..", "contract", "wire-golden.json")

type goldenMessage struct {
	Name string `json:"name"`
	Hex  string `json:"hex"`
}

type goldenMalformed struct {
	Name  string `json:"name"`
	Hex   string `json:"hex"`
	Error string `json:"error"` // short, type or invalid
}

type goldenFile struct {
	Comment   string            `json:"comment"`
	Messages  []goldenMessage   `json:"messages"`
	Malformed []goldenMalformed `json:"malformed"`
}

// goldenCase encodes a message and checks that its decoder gives the value back.
type goldenCase struct {
	name   string
	encode func() []byte
	decode func(b []byte) (any, error)
	want   any
}

func goldenCases() []goldenCase {
	welcome := Welcome{Player: 7, Spawn: Vec3{1.5, 2, -3}, TickRateHz: 60, WorldBlocks: 40000, WorldChunks: 160}
	chunk := WorldChunk{Seq: 1, Total: 3, CX: -1, CY: 0, CZ: 2, Blocks: []ChunkBlock{{0, 1}, {4095, 255}}}
	probe := Probe{Kind: ProbeApp, Player: 3, Seq: 99, SentMonoNs: 123456789}
	echo := Probe{Kind: ProbeNet, Player: 4294967295, Seq: 0, SentMonoNs: -1}
	input := Input{Player: 1, Seq: 2, Pos: Vec3{3, 4, 5}, Yaw: 0.5}
	place := BlockAction{Action: 9, Op: OpPlace, Pos: BlockPos{-1, 2, -3}, Kind: 4}
	remove := BlockAction{Action: 10, Op: OpRemove, Pos: BlockPos{0, 0, 0}, Kind: 0}
	state := State{Tick: 77, Transforms: []Transform{
		{Player: 1, Pos: Vec3{1, 2, 3}, Yaw: 1},
		{Player: 2, Pos: Vec3{4, 5, 6}, Yaw: 2},
	}}
	changes := []BlockChange{{Pos: BlockPos{1, 2, 3}, Kind: 5}, {Pos: BlockPos{-4, 0, 9}, Kind: 0}}
	encodeState := func(s State) []byte {
		b := AppendStateHeader(nil, s.Tick)
		for _, t := range s.Transforms {
			b = AppendTransform(b, t)
		}
		FinishState(b, len(s.Transforms))
		return b
	}
	decodeState := func(b []byte) (any, error) {
		s, err := DecodeState(b, nil)
		if len(s.Transforms) == 0 {
			s.Transforms = nil
		}
		return s, err
	}
	type tickChanges struct {
		Tick    uint32
		Changes []BlockChange
	}
	return []goldenCase{
		{"hello", func() []byte { return AppendHello(nil, Hello{Player: 42, Schema: SchemaVersion}) },
			func(b []byte) (any, error) { return DecodeHello(b) }, Hello{Player: 42, Schema: SchemaVersion}},
		{"welcome", func() []byte { return AppendWelcome(nil, welcome) },
			func(b []byte) (any, error) { return DecodeWelcome(b) }, welcome},
		{"world_chunk", func() []byte { return AppendWorldChunk(nil, chunk) },
			func(b []byte) (any, error) { return DecodeWorldChunk(b, nil) }, chunk},
		{"probe", func() []byte { return AppendProbe(nil, TProbe, probe, 0) },
			func(b []byte) (any, error) { return DecodeProbe(b) }, probe},
		{"probe_padded_24", func() []byte { return AppendProbe(nil, TProbe, probe, 24) },
			func(b []byte) (any, error) { return DecodeProbe(b) }, probe},
		{"probe_echo", func() []byte { return AppendProbe(nil, TProbeEcho, echo, ProbeHeaderBytes) },
			func(b []byte) (any, error) { return DecodeProbe(b) }, echo},
		{"input", func() []byte { return AppendInput(nil, input) },
			func(b []byte) (any, error) { return DecodeInput(b) }, input},
		{"block_action_place", func() []byte { return AppendBlockAction(nil, place) },
			func(b []byte) (any, error) { return DecodeBlockAction(b) }, place},
		{"block_action_remove", func() []byte { return AppendBlockAction(nil, remove) },
			func(b []byte) (any, error) { return DecodeBlockAction(b) }, remove},
		{"block_ack_ok", func() []byte { return AppendBlockAck(nil, BlockAck{Action: 9, OK: true}) },
			func(b []byte) (any, error) { return DecodeBlockAck(b) }, BlockAck{Action: 9, OK: true}},
		{"block_ack_refused", func() []byte { return AppendBlockAck(nil, BlockAck{Action: 10, OK: false}) },
			func(b []byte) (any, error) { return DecodeBlockAck(b) }, BlockAck{Action: 10, OK: false}},
		{"state", func() []byte { return encodeState(state) }, decodeState, state},
		{"state_empty", func() []byte { return encodeState(State{Tick: 0}) }, decodeState, State{Tick: 0}},
		{"block_changes", func() []byte { return AppendBlockChanges(nil, 5, changes) },
			func(b []byte) (any, error) {
				tick, got, err := DecodeBlockChanges(b, nil)
				return tickChanges{tick, got}, err
			}, tickChanges{5, changes}},
		{"keepalive", func() []byte { return AppendKeepalive(nil, 8) },
			func(b []byte) (any, error) { return DecodeKeepalive(b) }, uint32(8)},
	}
}

// goldenMalformedCases are messages every decoder must refuse, with the kind of error.
func goldenMalformedCases() []goldenMalformed {
	h := func(b []byte) string { return hex.EncodeToString(b) }
	nanInput := []byte{byte(TInput), 0, 0, 0, 1, 0, 0, 0, 1, 0x7f, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	infYawState := AppendStateHeader(nil, 1)
	infYawState = AppendTransform(infYawState, Transform{Player: 1})
	FinishState(infYawState, 1)
	copy(infYawState[len(infYawState)-4:], []byte{0x7f, 0x80, 0, 0})
	infSpawn := AppendWelcome(nil, Welcome{Player: 1})
	copy(infSpawn[5:], []byte{0xff, 0x80, 0, 0})
	return []goldenMalformed{
		{"empty", "", "short"},
		{"unknown_type", h([]byte{200, 1, 2}), "type"},
		{"type_zero", h([]byte{0}), "type"},
		{"hello_short", h(AppendHello(nil, Hello{Player: 1, Schema: 1})[:5]), "short"},
		{"welcome_infinite_spawn", h(infSpawn), "invalid"},
		{"truncated_probe", h(AppendProbe(nil, TProbe, Probe{}, 0)[:10]), "short"},
		{"bad_probe_kind", h(append([]byte{byte(TProbe), 9}, make([]byte, 16)...)), "invalid"},
		{"state_count_too_big", h([]byte{byte(TState), 0, 0, 0, 1, 0xff, 0xff}), "short"},
		{"state_infinite_yaw", h(infYawState), "invalid"},
		{"changes_count_lies", h([]byte{byte(TBlockChanges), 0, 0, 0, 1, 0, 3}), "short"},
		{"chunk_index_overflow", h(AppendWorldChunk(nil, WorldChunk{Seq: 0, Total: 1, Blocks: []ChunkBlock{{5000, 1}}})), "invalid"},
		{"chunk_kind_zero", h(AppendWorldChunk(nil, WorldChunk{Seq: 0, Total: 1, Blocks: []ChunkBlock{{5, 0}}})), "invalid"},
		{"chunk_seq_ge_total", h(AppendWorldChunk(nil, WorldChunk{Seq: 2, Total: 2})), "invalid"},
		{"chunk_count_lies", h(AppendWorldChunk(nil, WorldChunk{Seq: 0, Total: 1, Blocks: []ChunkBlock{{1, 1}, {2, 2}}})[:worldChunkHeader+3]), "short"},
		{"input_nan_position", h(nanInput), "invalid"},
		{"place_kind_zero", h(AppendBlockAction(nil, BlockAction{Op: OpPlace})), "invalid"},
		{"bad_block_op", h(AppendBlockAction(nil, BlockAction{Op: 7, Kind: 1})), "invalid"},
		{"block_ack_short", h([]byte{byte(TBlockAck), 0, 0, 0, 1}), "short"},
		{"keepalive_short", h([]byte{byte(TKeepalive), 0, 0, 1}), "short"},
	}
}

func wireErrorKind(err error) string {
	switch {
	case errors.Is(err, ErrShort):
		return "short"
	case errors.Is(err, ErrType):
		return "type"
	case errors.Is(err, ErrInvalid):
		return "invalid"
	}
	return "?"
}

func TestGoldenBytes(t *testing.T) {
	cases := goldenCases()
	if *update {
		doc := goldenFile{
			Comment: "Golden bytes of the game's wire format (prototypes/reference/internal/wire/wire.go), " +
				"checked by Go (golden_test.go) and C# (prototypes/unity/Netstick.Core.Tests/WireTests.cs). " +
				"Regenerate: go test ./internal/wire -run Golden -update (in prototypes/reference)",
			Malformed: goldenMalformedCases(),
		}
		for _, c := range cases {
			doc.Messages = append(doc.Messages, goldenMessage{c.name, hex.EncodeToString(c.encode())})
		}
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenPath, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("read %s: %v", goldenPath, err)
	}
	var doc goldenFile
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("parse %s: %v", goldenPath, err)
	}
	golden := map[string]string{}
	for _, m := range doc.Messages {
		golden[m.Name] = m.Hex
	}
	if len(golden) != len(cases) {
		t.Errorf("%s has %d messages, the test %d", goldenPath, len(golden), len(cases))
	}
	types := map[byte]bool{}
	for _, c := range cases {
		want, ok := golden[c.name]
		if !ok {
			t.Errorf("%s: missing from %s", c.name, goldenPath)
			continue
		}
		if got := hex.EncodeToString(c.encode()); got != want {
			t.Errorf("%s: Go encodes %s, %s says %s", c.name, got, goldenPath, want)
		}
		b, err := hex.DecodeString(want)
		if err != nil || len(b) == 0 {
			t.Errorf("%s: bad hex %q: %v", c.name, want, err)
			continue
		}
		types[b[0]] = true
		if err := Validate(b); err != nil {
			t.Errorf("%s: golden bytes do not validate: %v", c.name, err)
		}
		got, err := c.decode(b)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: decodes to %+v (%v), want %+v", c.name, got, err, c.want)
		}
	}
	for ty := THello; ty <= TKeepalive; ty++ {
		if !types[byte(ty)] {
			t.Errorf("message type %d has no golden bytes", ty)
		}
	}

	wantMal := goldenMalformedCases()
	if !reflect.DeepEqual(doc.Malformed, wantMal) {
		t.Errorf("%s: malformed cases differ from the test's; rerun with -update", goldenPath)
	}
	for _, m := range doc.Malformed {
		b, err := hex.DecodeString(m.Hex)
		if err != nil {
			t.Errorf("%s: bad hex: %v", m.Name, err)
			continue
		}
		err = Validate(b)
		if err == nil {
			t.Errorf("%s: % x accepted", m.Name, b)
		} else if kind := wireErrorKind(err); kind != m.Error {
			t.Errorf("%s: error %v is %s, want %s", m.Name, err, kind, m.Error)
		}
	}
	if !bytes.HasSuffix(raw, []byte("\n")) {
		t.Errorf("%s: no final newline", goldenPath)
	}
}
