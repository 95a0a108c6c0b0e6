using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Netstick.Core
{
    /// <summary>
    /// The decoders of <see cref="Wire"/>: (buffer, length) as the transports deliver them; every
    /// count a message declares is checked against its length, and anything malformed throws
    /// <see cref="WireException"/> only.
    /// </summary>
    public static partial class Wire
    {
        // ---- decoders: (b, length) as delivered; WireException on anything malformed ----

        public static Hello DecodeHello(byte[] b, int length)
        {
            Check(b, length, THello, HelloBytes);
            return new Hello { Player = U32(b, 1), Schema = b[5] };
        }

        public static Welcome DecodeWelcome(byte[] b, int length)
        {
            Check(b, length, TWelcome, WelcomeBytes);
            return new Welcome
            {
                Player = U32(b, 1),
                Spawn = ReadVec(b, 5),
                TickRateHz = U16(b, 17),
                WorldBlocks = U32(b, 19),
                WorldChunks = U32(b, 23),
            };
        }

        /// <summary>Decodes a WorldChunk; its Blocks are dst (cleared and refilled) or a new list when dst is null.</summary>
        public static WorldChunk DecodeWorldChunk(byte[] b, int length, List<ChunkBlock> dst)
        {
            Check(b, length, TWorldChunk, WorldChunkHeaderBytes);
            var m = new WorldChunk
            {
                Seq = U32(b, 1),
                Total = U32(b, 5),
                CX = (int)U32(b, 9),
                CY = (int)U32(b, 13),
                CZ = (int)U32(b, 17),
            };
            int n = U16(b, 21);
            if (length < WorldChunkHeaderBytes + 3 * n)
            {
                throw Short(TWorldChunk, length, WorldChunkHeaderBytes + 3 * n);
            }
            if (m.Seq >= m.Total)
            {
                throw Invalid("chunk " + m.Seq + " of " + m.Total);
            }
            m.Blocks = dst ?? new List<ChunkBlock>(n);
            m.Blocks.Clear();
            for (int i = 0; i < n; i++)
            {
                int o = WorldChunkHeaderBytes + 3 * i;
                var cb = new ChunkBlock(U16(b, o), b[o + 2]);
                if (cb.Index >= 4096 || cb.Kind == 0)
                {
                    throw Invalid("block index " + cb.Index + " kind " + cb.Kind);
                }
                m.Blocks.Add(cb);
            }
            return m;
        }

        /// <summary>Decodes a probe or an echo (b[0] says which); padding is ignored.</summary>
        public static Probe DecodeProbe(byte[] b, int length)
        {
            if (b == null || length < ProbeHeaderBytes || length > b.Length || (b[0] != TProbe && b[0] != TProbeEcho))
            {
                throw Short(TProbe, length, ProbeHeaderBytes);
            }
            var p = new Probe { Kind = b[1], Player = U32(b, 2), Seq = U32(b, 6), SentMonoNs = (long)U64(b, 10) };
            if (p.Kind != ProbeNet && p.Kind != ProbeApp)
            {
                throw Invalid("probe kind " + p.Kind);
            }
            return p;
        }

        public static Input DecodeInput(byte[] b, int length)
        {
            Check(b, length, TInput, InputBytes);
            Vec3 pos = ReadVec(b, 9);
            float yaw = F32(b, 21);
            if (!Finite(yaw))
            {
                throw Invalid("yaw not finite");
            }
            return new Input { Player = U32(b, 1), Seq = U32(b, 5), Pos = pos, Yaw = yaw };
        }

        public static BlockAction DecodeBlockAction(byte[] b, int length)
        {
            Check(b, length, TBlockAction, BlockActionBytes);
            var m = new BlockAction { Action = U32(b, 1), Op = b[5], Pos = ReadPos(b, 6), Kind = b[18] };
            if (m.Op != OpPlace && m.Op != OpRemove)
            {
                throw Invalid("block op " + m.Op);
            }
            if (m.Op == OpPlace && m.Kind == 0)
            {
                throw Invalid("place with block kind 0");
            }
            return m;
        }

        public static BlockAck DecodeBlockAck(byte[] b, int length)
        {
            Check(b, length, TBlockAck, BlockAckBytes);
            return new BlockAck { Action = U32(b, 1), Ok = b[5] == 1 };
        }

        /// <summary>Decodes a State: returns its tick and fills dst (cleared first) with its transforms.</summary>
        public static uint DecodeState(byte[] b, int length, List<Transform> dst)
        {
            Check(b, length, TState, StateHeaderBytes);
            int n = U16(b, 5);
            if (length < StateHeaderBytes + TransformBytes * n)
            {
                throw Short(TState, length, StateHeaderBytes + TransformBytes * n);
            }
            if (dst != null)
            {
                dst.Clear();
            }
            for (int i = 0; i < n; i++)
            {
                int o = StateHeaderBytes + TransformBytes * i;
                Vec3 pos = ReadVec(b, o + 4);
                float yaw = F32(b, o + 16);
                if (!Finite(yaw))
                {
                    throw Invalid("yaw not finite");
                }
                if (dst != null)
                {
                    dst.Add(new Transform { Player = U32(b, o), Pos = pos, Yaw = yaw });
                }
            }
            return U32(b, 1);
        }

        /// <summary>Decodes a BlockChanges message: returns its tick and fills dst (cleared first) with its changes.</summary>
        public static uint DecodeBlockChanges(byte[] b, int length, List<BlockChange> dst)
        {
            Check(b, length, TBlockChanges, BlockChangesHeaderBytes);
            int n = U16(b, 5);
            if (length < BlockChangesHeaderBytes + BlockChangeBytes * n)
            {
                throw Short(TBlockChanges, length, BlockChangesHeaderBytes + BlockChangeBytes * n);
            }
            if (dst != null)
            {
                dst.Clear();
                for (int i = 0; i < n; i++)
                {
                    int o = BlockChangesHeaderBytes + BlockChangeBytes * i;
                    dst.Add(new BlockChange(ReadPos(b, o), b[o + 12]));
                }
            }
            return U32(b, 1);
        }

        /// <summary>Decodes a keep-alive: the server tick.</summary>
        public static uint DecodeKeepalive(byte[] b, int length)
        {
            Check(b, length, TKeepalive, KeepaliveBytes);
            return U32(b, 1);
        }

        /// <summary>Decodes b as whatever its type byte says, only to check it; throws <see cref="WireException"/>.</summary>
        public static void Validate(byte[] b, int length)
        {
            if (b == null || length <= 0)
            {
                throw new WireException(WireError.Short, "empty message: message too short");
            }
            if (length > b.Length)
            {
                throw new WireException(WireError.Short, "length " + length + " beyond the buffer of " + b.Length + " B: message too short");
            }
            switch (b[0])
            {
                case THello: DecodeHello(b, length); break;
                case TWelcome: DecodeWelcome(b, length); break;
                case TWorldChunk: DecodeWorldChunk(b, length, null); break;
                case TProbe:
                case TProbeEcho: DecodeProbe(b, length); break;
                case TInput: DecodeInput(b, length); break;
                case TBlockAction: DecodeBlockAction(b, length); break;
                case TBlockAck: DecodeBlockAck(b, length); break;
                case TState: DecodeState(b, length, null); break;
                case TBlockChanges: DecodeBlockChanges(b, length, null); break;
                case TKeepalive: DecodeKeepalive(b, length); break;
                default: throw new WireException(WireError.Type, "type " + b[0] + ": unknown message type");
            }
        }

        /// <summary>Like <see cref="Validate"/> but returns the error message, or null for a valid message.</summary>
        public static string Check(byte[] b, int length)
        {
            try
            {
                Validate(b, length);
                return null;
            }
            catch (WireException e)
            {
                return e.Message;
            }
        }

        // ---- helpers ----


        private static void Check(byte[] b, int length, byte t, int need)
        {
            // length beyond the buffer would make the reads below throw IndexOutOfRange.
            if (b == null || length < need || length > b.Length || b[0] != t)
            {
                throw Short(t, length, need);
            }
        }

        private static WireException Short(byte t, int got, int want)
        {
            return new WireException(WireError.Short, "type " + t + ": " + got + " B, need " + want + ": message too short");
        }

        private static WireException Invalid(string what)
        {
            return new WireException(WireError.Invalid, what + ": invalid field");
        }

        private static Vec3 ReadVec(byte[] b, int o)
        {
            var v = new Vec3(F32(b, o), F32(b, o + 4), F32(b, o + 8));
            if (!Finite(v.X) || !Finite(v.Y) || !Finite(v.Z))
            {
                throw Invalid("position not finite");
            }
            return v;
        }

        private static BlockPos ReadPos(byte[] b, int o)
        {
            return new BlockPos((int)U32(b, o), (int)U32(b, o + 4), (int)U32(b, o + 8));
        }

        private static bool Finite(float f)
        {
            return !float.IsNaN(f) && !float.IsInfinity(f);
        }

        private static ushort U16(byte[] b, int o)
        {
            return (ushort)((b[o] << 8) | b[o + 1]);
        }

        private static uint U32(byte[] b, int o)
        {
            return ((uint)b[o] << 24) | ((uint)b[o + 1] << 16) | ((uint)b[o + 2] << 8) | b[o + 3];
        }

        private static ulong U64(byte[] b, int o)
        {
            return ((ulong)U32(b, o) << 32) | U32(b, o + 4);
        }

        private static float F32(byte[] b, int o)
        {
            return BitsToSingle(U32(b, o));
        }

        /// <summary>The IEEE-754 bits of v, without allocating (mono's 4.x profile lacks SingleToInt32Bits).</summary>
        public static uint SingleToBits(float v)
        {
            var u = new FloatBits { Float = v };
            return u.Bits;
        }

        /// <summary>The float whose IEEE-754 bits are bits.</summary>
        public static float BitsToSingle(uint bits)
        {
            var u = new FloatBits { Bits = bits };
            return u.Float;
        }

        [StructLayout(LayoutKind.Explicit)]
        private struct FloatBits
        {
            [FieldOffset(0)] public float Float;
            [FieldOffset(0)] public uint Bits;
        }
    }
}
