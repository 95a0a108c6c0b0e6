using System.Collections.Generic;

namespace Netstick.Core
{
    /// <summary>
    /// The game's messages, byte for byte as prototypes/reference/internal/wire/wire.go: a one-byte
    /// type first, integers big-endian, positions float32 metres. Decoders take (buffer, length) as the
    /// transports deliver them, check the length against every count the message declares, and throw
    /// only <see cref="WireException"/> (counted as <c>malformed</c>, never fatal).
    /// The golden bytes of prototypes/contract/wire-golden.json hold this codec and Go's to one form.
    /// </summary>
    public static partial class Wire
    {
        public const byte THello = 1;
        public const byte TWelcome = 2;
        public const byte TWorldChunk = 3;
        public const byte TProbe = 4;
        public const byte TProbeEcho = 5;
        public const byte TInput = 6;
        public const byte TBlockAction = 7;
        public const byte TBlockAck = 8;
        public const byte TState = 9;
        public const byte TBlockChanges = 10;
        public const byte TKeepalive = 11;

        /// <summary>Sent in Hello so that a mismatched client is refused, not misread.</summary>
        public const byte SchemaVersion = 1;

        /// <summary>A probe echoed in the server's receive path.</summary>
        public const byte ProbeNet = 0;
        /// <summary>A probe echoed in the server's next game tick.</summary>
        public const byte ProbeApp = 1;

        public const byte OpPlace = 1;
        public const byte OpRemove = 2;

        /// <summary>The smallest probe (type, kind, player, seq, send time); padding may follow.</summary>
        public const int ProbeHeaderBytes = 18;
        public const int HelloBytes = 6;
        public const int WelcomeBytes = 1 + 4 + 12 + 2 + 4 + 4;
        public const int WorldChunkHeaderBytes = 1 + 4 + 4 + 12 + 2;
        public const int InputBytes = 1 + 4 + 4 + 12 + 4;
        public const int BlockActionBytes = 1 + 4 + 1 + 12 + 1;
        public const int BlockAckBytes = 6;
        public const int TransformBytes = 20;
        public const int StateHeaderBytes = 1 + 4 + 2;
        public const int BlockChangeBytes = 13;
        public const int BlockChangesHeaderBytes = 1 + 4 + 2;
        public const int KeepaliveBytes = 5;

        // ---- encoders: append one message to buf ----

        public static void AppendHello(WireBuffer buf, Hello m)
        {
            buf.PutByte(THello);
            buf.PutUInt32(m.Player);
            buf.PutByte(m.Schema);
        }

        public static void AppendWelcome(WireBuffer buf, Welcome m)
        {
            buf.PutByte(TWelcome);
            buf.PutUInt32(m.Player);
            PutVec(buf, m.Spawn);
            buf.PutUInt16(m.TickRateHz);
            buf.PutUInt32(m.WorldBlocks);
            buf.PutUInt32(m.WorldChunks);
        }

        /// <summary>A WorldChunk with m.Blocks (at most 65535, as the count is 16 bits; a 16³ chunk has 4096).</summary>
        public static void AppendWorldChunk(WireBuffer buf, WorldChunk m)
        {
            int n = m.Blocks == null ? 0 : m.Blocks.Count;
            buf.PutByte(TWorldChunk);
            buf.PutUInt32(m.Seq);
            buf.PutUInt32(m.Total);
            buf.PutInt32(m.CX);
            buf.PutInt32(m.CY);
            buf.PutInt32(m.CZ);
            buf.PutUInt16((ushort)n);
            for (int i = 0; i < n; i++)
            {
                buf.PutUInt16(m.Blocks[i].Index);
                buf.PutByte(m.Blocks[i].Kind);
            }
        }

        /// <summary>A probe of type t (<see cref="TProbe"/> or <see cref="TProbeEcho"/>) padded with zeros to size bytes.</summary>
        public static void AppendProbe(WireBuffer buf, byte t, Probe p, int size)
        {
            int start = buf.Length;
            buf.PutByte(t);
            buf.PutByte(p.Kind);
            buf.PutUInt32(p.Player);
            buf.PutUInt32(p.Seq);
            buf.PutUInt64((ulong)p.SentMonoNs);
            buf.PadTo(start, size);
        }

        public static void AppendInput(WireBuffer buf, Input m)
        {
            buf.PutByte(TInput);
            buf.PutUInt32(m.Player);
            buf.PutUInt32(m.Seq);
            PutVec(buf, m.Pos);
            buf.PutFloat32(m.Yaw);
        }

        public static void AppendBlockAction(WireBuffer buf, BlockAction m)
        {
            buf.PutByte(TBlockAction);
            buf.PutUInt32(m.Action);
            buf.PutByte(m.Op);
            PutPos(buf, m.Pos);
            buf.PutByte(m.Kind);
        }

        public static void AppendBlockAck(WireBuffer buf, BlockAck m)
        {
            buf.PutByte(TBlockAck);
            buf.PutUInt32(m.Action);
            buf.PutByte(m.Ok ? (byte)1 : (byte)0);
        }

        /// <summary>
        /// Starts a State message at buf.Length and returns its offset: append transforms with
        /// <see cref="AppendTransform"/>, then call <see cref="FinishState"/> with that offset and the count.
        /// </summary>
        public static int AppendStateHeader(WireBuffer buf, uint tick)
        {
            int start = buf.Length;
            buf.PutByte(TState);
            buf.PutUInt32(tick);
            buf.PutUInt16(0);
            return start;
        }

        public static void AppendTransform(WireBuffer buf, Transform t)
        {
            buf.PutUInt32(t.Player);
            PutVec(buf, t.Pos);
            buf.PutFloat32(t.Yaw);
        }

        /// <summary>Writes the transform count into the State message started at offset start.</summary>
        public static void FinishState(WireBuffer buf, int start, int count)
        {
            buf.SetUInt16(start + 5, (ushort)count);
        }

        /// <summary>A State message with the given transforms.</summary>
        public static void AppendState(WireBuffer buf, uint tick, IList<Transform> transforms)
        {
            int start = AppendStateHeader(buf, tick);
            for (int i = 0; i < transforms.Count; i++)
            {
                AppendTransform(buf, transforms[i]);
            }
            FinishState(buf, start, transforms.Count);
        }

        public static void AppendBlockChanges(WireBuffer buf, uint tick, IList<BlockChange> changes)
        {
            buf.PutByte(TBlockChanges);
            buf.PutUInt32(tick);
            buf.PutUInt16((ushort)changes.Count);
            for (int i = 0; i < changes.Count; i++)
            {
                PutPos(buf, changes[i].Pos);
                buf.PutByte(changes[i].Kind);
            }
        }

        public static void AppendKeepalive(WireBuffer buf, uint tick)
        {
            buf.PutByte(TKeepalive);
            buf.PutUInt32(tick);
        }

        private static void PutVec(WireBuffer buf, Vec3 v)
        {
            buf.PutFloat32(v.X);
            buf.PutFloat32(v.Y);
            buf.PutFloat32(v.Z);
        }

        private static void PutPos(WireBuffer buf, BlockPos p)
        {
            buf.PutInt32(p.X);
            buf.PutInt32(p.Y);
            buf.PutInt32(p.Z);
        }
    }
}
