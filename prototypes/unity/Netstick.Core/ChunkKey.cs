using System;

namespace Netstick.Core
{
    /// <summary>A chunk's coordinate: block coordinate / 16, rounded down.</summary>
    public struct ChunkKey : IEquatable<ChunkKey>, IComparable<ChunkKey>
    {
        public readonly int X;
        public readonly int Y;
        public readonly int Z;

        public ChunkKey(int x, int y, int z)
        {
            X = x;
            Y = y;
            Z = z;
        }

        public bool Equals(ChunkKey other)
        {
            return X == other.X && Y == other.Y && Z == other.Z;
        }

        public override bool Equals(object obj)
        {
            return obj is ChunkKey && Equals((ChunkKey)obj);
        }

        public override int GetHashCode()
        {
            unchecked
            {
                return (X * 73856093) ^ (Y * 19349663) ^ (Z * 83492791);
            }
        }

        /// <summary>Orders by x, then y, then z: the snapshot's stable order.</summary>
        public int CompareTo(ChunkKey other)
        {
            if (X != other.X)
            {
                return X.CompareTo(other.X);
            }
            if (Y != other.Y)
            {
                return Y.CompareTo(other.Y);
            }
            return Z.CompareTo(other.Z);
        }

        public override string ToString()
        {
            return "(" + X + "," + Y + "," + Z + ")";
        }
    }
}
