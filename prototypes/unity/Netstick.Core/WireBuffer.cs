using System;

namespace Netstick.Core
{
    /// <summary>
    /// A growable byte buffer that messages are encoded into (the C# form of Go's append-style
    /// encoders): <see cref="Data"/>[0, <see cref="Length"/>) is the message. Reuse one per sender and
    /// call <see cref="Clear"/> between messages to encode without allocating. Integers big-endian.
    /// </summary>
    public sealed class WireBuffer
    {
        public WireBuffer(int capacity = 256)
        {
            Data = new byte[Math.Max(capacity, 16)];
        }

        /// <summary>The storage; only the first <see cref="Length"/> bytes are the message.</summary>
        public byte[] Data { get; private set; }

        /// <summary>Bytes written.</summary>
        public int Length { get; private set; }

        /// <summary>Forgets the contents, keeping the storage.</summary>
        public void Clear()
        {
            Length = 0;
        }

        /// <summary>A copy of the message bytes.</summary>
        public byte[] ToArray()
        {
            var b = new byte[Length];
            Buffer.BlockCopy(Data, 0, b, 0, Length);
            return b;
        }

        private void Grow(int n)
        {
            if (Length + n <= Data.Length)
            {
                return;
            }
            var bigger = new byte[Math.Max(Data.Length * 2, Length + n)];
            Buffer.BlockCopy(Data, 0, bigger, 0, Length);
            Data = bigger;
        }

        public void PutByte(byte v)
        {
            Grow(1);
            Data[Length++] = v;
        }

        public void PutUInt16(ushort v)
        {
            Grow(2);
            Data[Length++] = (byte)(v >> 8);
            Data[Length++] = (byte)v;
        }

        public void PutUInt32(uint v)
        {
            Grow(4);
            Data[Length++] = (byte)(v >> 24);
            Data[Length++] = (byte)(v >> 16);
            Data[Length++] = (byte)(v >> 8);
            Data[Length++] = (byte)v;
        }

        public void PutInt32(int v)
        {
            PutUInt32((uint)v);
        }

        public void PutUInt64(ulong v)
        {
            PutUInt32((uint)(v >> 32));
            PutUInt32((uint)v);
        }

        /// <summary>An IEEE-754 float32, big-endian.</summary>
        public void PutFloat32(float v)
        {
            PutUInt32(Wire.SingleToBits(v));
        }

        /// <summary>Appends zero bytes until the buffer holds size bytes from start (probe padding).</summary>
        public void PadTo(int start, int size)
        {
            int n = start + size - Length;
            if (n <= 0)
            {
                return;
            }
            Grow(n);
            Array.Clear(Data, Length, n);
            Length += n;
        }

        /// <summary>Overwrites a big-endian uint16 at offset (State's transform count).</summary>
        public void SetUInt16(int offset, ushort v)
        {
            if (offset < 0 || offset + 2 > Length)
            {
                throw new ArgumentOutOfRangeException("offset", offset, "outside the written bytes");
            }
            Data[offset] = (byte)(v >> 8);
            Data[offset + 1] = (byte)v;
        }
    }
}
