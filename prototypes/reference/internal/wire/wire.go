// Package wire encodes and decodes the game's messages. Every message starts with a
// one-byte type; integers are big-endian; positions are float32 metres.
//
// Decoders never panic and never trust a length from the network: every decoder
// checks the message size against the counts it declares (fuzzed in wire_test.go).
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Type is the first byte of every message.
type Type uint8

// Message types.
const (
	THello        Type = 1
	TWelcome      Type = 2
	TWorldChunk   Type = 3
	TProbe        Type = 4
	TProbeEcho    Type = 5
	TInput        Type = 6
	TBlockAction  Type = 7
	TBlockAck     Type = 8
	TState        Type = 9
	TBlockChanges Type = 10
	TKeepalive    Type = 11
)

// SchemaVersion is sent in Hello so a mismatched client is refused, not misread.
const SchemaVersion = 1

// ProbeKind says who echoes a probe: the server's receive path or its game tick.
type ProbeKind uint8

const (
	// ProbeNet is echoed in the server's receive path.
	ProbeNet ProbeKind = 0
	// ProbeApp is echoed in the server's next game tick.
	ProbeApp ProbeKind = 1
)

// ProbeHeaderBytes is the smallest probe; padding may follow.
const ProbeHeaderBytes = 18

// Errors returned by decoders.
var (
	ErrShort   = errors.New("message too short")
	ErrType    = errors.New("unknown message type")
	ErrInvalid = errors.New("invalid field")
)

func short(t Type, got, want int) error {
	return fmt.Errorf("type %d: %d B, need %d: %w", t, got, want, ErrShort)
}

// Hello is the first message of a player.
type Hello struct {
	Player uint32
	Schema uint8
}

// AppendHello appends an encoded Hello.
func AppendHello(b []byte, m Hello) []byte {
	b = append(b, byte(THello))
	b = binary.BigEndian.AppendUint32(b, m.Player)
	return append(b, m.Schema)
}

// DecodeHello decodes a Hello.
func DecodeHello(b []byte) (Hello, error) {
	if len(b) < 6 || Type(b[0]) != THello {
		return Hello{}, short(THello, len(b), 6)
	}
	return Hello{Player: binary.BigEndian.Uint32(b[1:]), Schema: b[5]}, nil
}

// Vec3 is a position in metres.
type Vec3 struct{ X, Y, Z float32 }

func appendVec(b []byte, v Vec3) []byte {
	b = binary.BigEndian.AppendUint32(b, math.Float32bits(v.X))
	b = binary.BigEndian.AppendUint32(b, math.Float32bits(v.Y))
	return binary.BigEndian.AppendUint32(b, math.Float32bits(v.Z))
}

func readVec(b []byte) (Vec3, error) {
	v := Vec3{
		X: math.Float32frombits(binary.BigEndian.Uint32(b)),
		Y: math.Float32frombits(binary.BigEndian.Uint32(b[4:])),
		Z: math.Float32frombits(binary.BigEndian.Uint32(b[8:])),
	}
	if !finite(v.X) || !finite(v.Y) || !finite(v.Z) {
		return v, fmt.Errorf("position not finite: %w", ErrInvalid)
	}
	return v, nil
}

func finite(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// Welcome answers Hello: where the player spawns and how big the world snapshot is.
type Welcome struct {
	Player      uint32
	Spawn       Vec3
	TickRateHz  uint16
	WorldBlocks uint32
	WorldChunks uint32 // WorldChunk messages that follow on the reliable channel
}

const welcomeBytes = 1 + 4 + 12 + 2 + 4 + 4

// AppendWelcome appends an encoded Welcome.
func AppendWelcome(b []byte, m Welcome) []byte {
	b = append(b, byte(TWelcome))
	b = binary.BigEndian.AppendUint32(b, m.Player)
	b = appendVec(b, m.Spawn)
	b = binary.BigEndian.AppendUint16(b, m.TickRateHz)
	b = binary.BigEndian.AppendUint32(b, m.WorldBlocks)
	return binary.BigEndian.AppendUint32(b, m.WorldChunks)
}

// DecodeWelcome decodes a Welcome.
func DecodeWelcome(b []byte) (Welcome, error) {
	if len(b) < welcomeBytes || Type(b[0]) != TWelcome {
		return Welcome{}, short(TWelcome, len(b), welcomeBytes)
	}
	spawn, err := readVec(b[5:])
	if err != nil {
		return Welcome{}, err
	}
	return Welcome{
		Player:      binary.BigEndian.Uint32(b[1:]),
		Spawn:       spawn,
		TickRateHz:  binary.BigEndian.Uint16(b[17:]),
		WorldBlocks: binary.BigEndian.Uint32(b[19:]),
		WorldChunks: binary.BigEndian.Uint32(b[23:]),
	}, nil
}

// ChunkBlock is one block inside a chunk: Index = x + 16*(y + 16*z) of its local
// coordinates, Kind 1..255.
type ChunkBlock struct {
	Index uint16
	Kind  uint8
}

// WorldChunk carries the blocks of one 16³ chunk of the world snapshot.
type WorldChunk struct {
	Seq        uint32 // 0..Total-1
	Total      uint32
	CX, CY, CZ int32
	Blocks     []ChunkBlock
}

const worldChunkHeader = 1 + 4 + 4 + 12 + 2

// AppendWorldChunk appends an encoded WorldChunk.
func AppendWorldChunk(b []byte, m WorldChunk) []byte {
	b = append(b, byte(TWorldChunk))
	b = binary.BigEndian.AppendUint32(b, m.Seq)
	b = binary.BigEndian.AppendUint32(b, m.Total)
	b = binary.BigEndian.AppendUint32(b, uint32(m.CX))
	b = binary.BigEndian.AppendUint32(b, uint32(m.CY))
	b = binary.BigEndian.AppendUint32(b, uint32(m.CZ))
	b = binary.BigEndian.AppendUint16(b, uint16(len(m.Blocks)))
	for _, cb := range m.Blocks {
		b = binary.BigEndian.AppendUint16(b, cb.Index)
		b = append(b, cb.Kind)
	}
	return b
}

// DecodeWorldChunk decodes a WorldChunk; blocks reuse dst's storage.
func DecodeWorldChunk(b []byte, dst []ChunkBlock) (WorldChunk, error) {
	if len(b) < worldChunkHeader || Type(b[0]) != TWorldChunk {
		return WorldChunk{}, short(TWorldChunk, len(b), worldChunkHeader)
	}
	m := WorldChunk{
		Seq:   binary.BigEndian.Uint32(b[1:]),
		Total: binary.BigEndian.Uint32(b[5:]),
		CX:    int32(binary.BigEndian.Uint32(b[9:])),
		CY:    int32(binary.BigEndian.Uint32(b[13:])),
		CZ:    int32(binary.BigEndian.Uint32(b[17:])),
	}
	n := int(binary.BigEndian.Uint16(b[21:]))
	if len(b) < worldChunkHeader+3*n {
		return WorldChunk{}, short(TWorldChunk, len(b), worldChunkHeader+3*n)
	}
	if m.Seq >= m.Total {
		return WorldChunk{}, fmt.Errorf("chunk %d of %d: %w", m.Seq, m.Total, ErrInvalid)
	}
	m.Blocks = dst[:0]
	for i := range n {
		o := worldChunkHeader + 3*i
		cb := ChunkBlock{Index: binary.BigEndian.Uint16(b[o:]), Kind: b[o+2]}
		if cb.Index >= 4096 || cb.Kind == 0 {
			return WorldChunk{}, fmt.Errorf("block index %d kind %d: %w", cb.Index, cb.Kind, ErrInvalid)
		}
		m.Blocks = append(m.Blocks, cb)
	}
	return m, nil
}

// Probe is the uniform RTT probe. SentMonoNs is the client's monotonic clock, so the
// client computes the RTT from the echo alone.
type Probe struct {
	Kind       ProbeKind
	Player     uint32
	Seq        uint32
	SentMonoNs int64
}

// AppendProbe appends a probe of type t (TProbe or TProbeEcho) padded to size bytes.
func AppendProbe(b []byte, t Type, p Probe, size int) []byte {
	start := len(b)
	b = append(b, byte(t), byte(p.Kind))
	b = binary.BigEndian.AppendUint32(b, p.Player)
	b = binary.BigEndian.AppendUint32(b, p.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(p.SentMonoNs))
	for len(b)-start < size {
		b = append(b, 0)
	}
	return b
}

// DecodeProbe decodes a probe or an echo (check b[0] for which).
func DecodeProbe(b []byte) (Probe, error) {
	if len(b) < ProbeHeaderBytes || (Type(b[0]) != TProbe && Type(b[0]) != TProbeEcho) {
		return Probe{}, short(TProbe, len(b), ProbeHeaderBytes)
	}
	p := Probe{
		Kind:       ProbeKind(b[1]),
		Player:     binary.BigEndian.Uint32(b[2:]),
		Seq:        binary.BigEndian.Uint32(b[6:]),
		SentMonoNs: int64(binary.BigEndian.Uint64(b[10:])),
	}
	if p.Kind != ProbeNet && p.Kind != ProbeApp {
		return Probe{}, fmt.Errorf("probe kind %d: %w", p.Kind, ErrInvalid)
	}
	return p, nil
}

// Input is a player's transform, sent when it moves.
type Input struct {
	Player uint32
	Seq    uint32
	Pos    Vec3
	Yaw    float32
}

const inputBytes = 1 + 4 + 4 + 12 + 4

// AppendInput appends an encoded Input.
func AppendInput(b []byte, m Input) []byte {
	b = append(b, byte(TInput))
	b = binary.BigEndian.AppendUint32(b, m.Player)
	b = binary.BigEndian.AppendUint32(b, m.Seq)
	b = appendVec(b, m.Pos)
	return binary.BigEndian.AppendUint32(b, math.Float32bits(m.Yaw))
}

// DecodeInput decodes an Input.
func DecodeInput(b []byte) (Input, error) {
	if len(b) < inputBytes || Type(b[0]) != TInput {
		return Input{}, short(TInput, len(b), inputBytes)
	}
	pos, err := readVec(b[9:])
	if err != nil {
		return Input{}, err
	}
	yaw := math.Float32frombits(binary.BigEndian.Uint32(b[21:]))
	if !finite(yaw) {
		return Input{}, fmt.Errorf("yaw not finite: %w", ErrInvalid)
	}
	return Input{Player: binary.BigEndian.Uint32(b[1:]), Seq: binary.BigEndian.Uint32(b[5:]), Pos: pos, Yaw: yaw}, nil
}

// BlockOp is a block action.
type BlockOp uint8

// Block operations.
const (
	OpPlace  BlockOp = 1
	OpRemove BlockOp = 2
)

// BlockPos is an integer block coordinate.
type BlockPos struct{ X, Y, Z int32 }

// BlockAction asks the server to place or remove a block.
type BlockAction struct {
	Action uint32
	Op     BlockOp
	Pos    BlockPos
	Kind   uint8
}

const blockActionBytes = 1 + 4 + 1 + 12 + 1

func appendPos(b []byte, p BlockPos) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(p.X))
	b = binary.BigEndian.AppendUint32(b, uint32(p.Y))
	return binary.BigEndian.AppendUint32(b, uint32(p.Z))
}

func readPos(b []byte) BlockPos {
	return BlockPos{
		X: int32(binary.BigEndian.Uint32(b)),
		Y: int32(binary.BigEndian.Uint32(b[4:])),
		Z: int32(binary.BigEndian.Uint32(b[8:])),
	}
}

// AppendBlockAction appends an encoded BlockAction.
func AppendBlockAction(b []byte, m BlockAction) []byte {
	b = append(b, byte(TBlockAction))
	b = binary.BigEndian.AppendUint32(b, m.Action)
	b = append(b, byte(m.Op))
	b = appendPos(b, m.Pos)
	return append(b, m.Kind)
}

// DecodeBlockAction decodes a BlockAction.
func DecodeBlockAction(b []byte) (BlockAction, error) {
	if len(b) < blockActionBytes || Type(b[0]) != TBlockAction {
		return BlockAction{}, short(TBlockAction, len(b), blockActionBytes)
	}
	m := BlockAction{Action: binary.BigEndian.Uint32(b[1:]), Op: BlockOp(b[5]), Pos: readPos(b[6:]), Kind: b[18]}
	if m.Op != OpPlace && m.Op != OpRemove {
		return BlockAction{}, fmt.Errorf("block op %d: %w", m.Op, ErrInvalid)
	}
	if m.Op == OpPlace && m.Kind == 0 {
		return BlockAction{}, fmt.Errorf("place with block kind 0: %w", ErrInvalid)
	}
	return m, nil
}

// BlockAck answers a BlockAction.
type BlockAck struct {
	Action uint32
	OK     bool
}

// AppendBlockAck appends an encoded BlockAck.
func AppendBlockAck(b []byte, m BlockAck) []byte {
	b = append(b, byte(TBlockAck))
	b = binary.BigEndian.AppendUint32(b, m.Action)
	if m.OK {
		return append(b, 1)
	}
	return append(b, 0)
}

// DecodeBlockAck decodes a BlockAck.
func DecodeBlockAck(b []byte) (BlockAck, error) {
	if len(b) < 6 || Type(b[0]) != TBlockAck {
		return BlockAck{}, short(TBlockAck, len(b), 6)
	}
	return BlockAck{Action: binary.BigEndian.Uint32(b[1:]), OK: b[5] == 1}, nil
}

// Transform is one player's state in a State message.
type Transform struct {
	Player uint32
	Pos    Vec3
	Yaw    float32
}

// TransformBytes is the encoded size of one Transform.
const TransformBytes = 20

// StateHeaderBytes is the size of a State message without transforms.
const StateHeaderBytes = 1 + 4 + 2

// AppendStateHeader starts a State message; append transforms with AppendTransform
// and then call FinishState with the count.
func AppendStateHeader(b []byte, tick uint32) []byte {
	b = append(b, byte(TState))
	b = binary.BigEndian.AppendUint32(b, tick)
	return append(b, 0, 0)
}

// AppendTransform appends one transform to a State message.
func AppendTransform(b []byte, t Transform) []byte {
	b = binary.BigEndian.AppendUint32(b, t.Player)
	b = appendVec(b, t.Pos)
	return binary.BigEndian.AppendUint32(b, math.Float32bits(t.Yaw))
}

// FinishState writes the transform count into a State message started at b[0].
func FinishState(b []byte, count int) {
	binary.BigEndian.PutUint16(b[5:], uint16(count))
}

// State is a decoded State message.
type State struct {
	Tick       uint32
	Transforms []Transform
}

// DecodeState decodes a State; transforms reuse dst's storage.
func DecodeState(b []byte, dst []Transform) (State, error) {
	if len(b) < StateHeaderBytes || Type(b[0]) != TState {
		return State{}, short(TState, len(b), StateHeaderBytes)
	}
	n := int(binary.BigEndian.Uint16(b[5:]))
	if len(b) < StateHeaderBytes+TransformBytes*n {
		return State{}, short(TState, len(b), StateHeaderBytes+TransformBytes*n)
	}
	s := State{Tick: binary.BigEndian.Uint32(b[1:]), Transforms: dst[:0]}
	for i := range n {
		o := StateHeaderBytes + TransformBytes*i
		pos, err := readVec(b[o+4:])
		if err != nil {
			return State{}, err
		}
		yaw := math.Float32frombits(binary.BigEndian.Uint32(b[o+16:]))
		if !finite(yaw) {
			return State{}, fmt.Errorf("yaw not finite: %w", ErrInvalid)
		}
		s.Transforms = append(s.Transforms, Transform{Player: binary.BigEndian.Uint32(b[o:]), Pos: pos, Yaw: yaw})
	}
	return s, nil
}

// BlockChange is one changed block; Kind 0 means removed.
type BlockChange struct {
	Pos  BlockPos
	Kind uint8
}

// BlockChangeBytes is the encoded size of one BlockChange.
const BlockChangeBytes = 13

// BlockChangesHeaderBytes is the size of a BlockChanges message without changes.
const BlockChangesHeaderBytes = 1 + 4 + 2

// AppendBlockChanges appends an encoded BlockChanges message.
func AppendBlockChanges(b []byte, tick uint32, changes []BlockChange) []byte {
	b = append(b, byte(TBlockChanges))
	b = binary.BigEndian.AppendUint32(b, tick)
	b = binary.BigEndian.AppendUint16(b, uint16(len(changes)))
	for _, c := range changes {
		b = appendPos(b, c.Pos)
		b = append(b, c.Kind)
	}
	return b
}

// DecodeBlockChanges decodes a BlockChanges message; changes reuse dst's storage.
func DecodeBlockChanges(b []byte, dst []BlockChange) (uint32, []BlockChange, error) {
	if len(b) < BlockChangesHeaderBytes || Type(b[0]) != TBlockChanges {
		return 0, nil, short(TBlockChanges, len(b), BlockChangesHeaderBytes)
	}
	n := int(binary.BigEndian.Uint16(b[5:]))
	if len(b) < BlockChangesHeaderBytes+BlockChangeBytes*n {
		return 0, nil, short(TBlockChanges, len(b), BlockChangesHeaderBytes+BlockChangeBytes*n)
	}
	out := dst[:0]
	for i := range n {
		o := BlockChangesHeaderBytes + BlockChangeBytes*i
		out = append(out, BlockChange{Pos: readPos(b[o:]), Kind: b[o+12]})
	}
	return binary.BigEndian.Uint32(b[1:]), out, nil
}

// AppendKeepalive appends a keep-alive carrying the server tick.
func AppendKeepalive(b []byte, tick uint32) []byte {
	b = append(b, byte(TKeepalive))
	return binary.BigEndian.AppendUint32(b, tick)
}

// DecodeKeepalive decodes a keep-alive.
func DecodeKeepalive(b []byte) (uint32, error) {
	if len(b) < 5 || Type(b[0]) != TKeepalive {
		return 0, short(TKeepalive, len(b), 5)
	}
	return binary.BigEndian.Uint32(b[1:]), nil
}

// Validate decodes b as whatever its type byte says, only to check it. The fuzz test
// drives every decoder through it.
func Validate(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("empty message: %w", ErrShort)
	}
	var err error
	switch Type(b[0]) {
	case THello:
		_, err = DecodeHello(b)
	case TWelcome:
		_, err = DecodeWelcome(b)
	case TWorldChunk:
		_, err = DecodeWorldChunk(b, nil)
	case TProbe, TProbeEcho:
		_, err = DecodeProbe(b)
	case TInput:
		_, err = DecodeInput(b)
	case TBlockAction:
		_, err = DecodeBlockAction(b)
	case TBlockAck:
		_, err = DecodeBlockAck(b)
	case TState:
		_, err = DecodeState(b, nil)
	case TBlockChanges:
		_, _, err = DecodeBlockChanges(b, nil)
	case TKeepalive:
		_, err = DecodeKeepalive(b)
	default:
		err = fmt.Errorf("type %d: %w", b[0], ErrType)
	}
	return err
}
