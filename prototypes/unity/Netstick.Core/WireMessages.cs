using System.Collections.Generic;

namespace Netstick.Core
{
    /// <summary>A position in metres (float32 on the wire).</summary>
    public struct Vec3
    {
        public float X, Y, Z;
        public Vec3(float x, float y, float z) { X = x; Y = y; Z = z; }
        public override string ToString() { return "(" + X + ", " + Y + ", " + Z + ")"; }
    }

    /// <summary>An integer block coordinate.</summary>
    public struct BlockPos
    {
        public int X, Y, Z;
        public BlockPos(int x, int y, int z) { X = x; Y = y; Z = z; }
    }

    /// <summary>The first message of a player.</summary>
    public struct Hello
    {
        public uint Player;
        public byte Schema;
    }

    /// <summary>The answer to Hello: spawn position and the size of the world snapshot that follows.</summary>
    public struct Welcome
    {
        public uint Player;
        public Vec3 Spawn;
        public ushort TickRateHz;
        public uint WorldBlocks;
        /// <summary>WorldChunk messages that follow on the reliable channel.</summary>
        public uint WorldChunks;
    }

    /// <summary>One block inside a chunk: Index = x + 16*(y + 16*z) of its local coordinates, Kind 1..255.</summary>
    public struct ChunkBlock
    {
        public ushort Index;
        public byte Kind;
        public ChunkBlock(ushort index, byte kind) { Index = index; Kind = kind; }
    }

    /// <summary>The blocks of one 16³ chunk of the world snapshot.</summary>
    public struct WorldChunk
    {
        /// <summary>0 .. Total-1.</summary>
        public uint Seq;
        public uint Total;
        public int CX, CY, CZ;
        public List<ChunkBlock> Blocks;
    }

    /// <summary>The uniform RTT probe; SentMonoNs is the client's monotonic clock.</summary>
    public struct Probe
    {
        /// <summary><see cref="Wire.ProbeNet"/> or <see cref="Wire.ProbeApp"/>.</summary>
        public byte Kind;
        public uint Player;
        public uint Seq;
        public long SentMonoNs;
    }

    /// <summary>A player's transform, sent when it moves.</summary>
    public struct Input
    {
        public uint Player;
        public uint Seq;
        public Vec3 Pos;
        public float Yaw;
    }

    /// <summary>A request to place or remove a block.</summary>
    public struct BlockAction
    {
        public uint Action;
        /// <summary><see cref="Wire.OpPlace"/> or <see cref="Wire.OpRemove"/>.</summary>
        public byte Op;
        public BlockPos Pos;
        public byte Kind;
    }

    /// <summary>The answer to a BlockAction, applied or refused.</summary>
    public struct BlockAck
    {
        public uint Action;
        public bool Ok;
    }

    /// <summary>One player's state in a State message.</summary>
    public struct Transform
    {
        public uint Player;
        public Vec3 Pos;
        public float Yaw;
    }

    /// <summary>One changed block; Kind 0 means removed.</summary>
    public struct BlockChange
    {
        public BlockPos Pos;
        public byte Kind;
        public BlockChange(BlockPos pos, byte kind) { Pos = pos; Kind = kind; }
    }
}
