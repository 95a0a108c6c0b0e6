using System;
using System.Collections.Generic;

namespace Netstick.Core
{
    /// <summary>
    /// The server's voxel world: blocks (kind 1..255, 0 = empty) in chunks of 16×16×16, and the snapshot
    /// a joining player receives (CONTRACT.md §4). Not thread-safe: the core uses it from the host's thread.
    /// </summary>
    public sealed class World
    {
        /// <summary>The side of a chunk in blocks.</summary>
        public const int ChunkSide = 1 << ChunkBits;

        /// <summary>Blocks per chunk.</summary>
        public const int ChunkVolume = ChunkSide * ChunkSide * ChunkSide;

        /// <summary>The largest WorldChunk message: a full chunk (its header, then 3 bytes a block).</summary>
        public const int MaxChunkMessageBytes = Wire.WorldChunkHeaderBytes + 3 * ChunkVolume;

        // Chunk and in-chunk index come from shifts and masks, which are floor division and modulo for
        // every int, negative coordinates and int.MinValue included.
        private const int ChunkBits = 4;
        private const int Mask = ChunkSide - 1;

        private sealed class Chunk
        {
            public readonly byte[] Kinds = new byte[ChunkVolume];
            public int Count;
        }

        private readonly Dictionary<ChunkKey, Chunk> chunks = new Dictionary<ChunkKey, Chunk>();

        /// <summary>Blocks in the world.</summary>
        public int Blocks { get; private set; }

        /// <summary>Chunks holding at least one block.</summary>
        public int Chunks
        {
            get { return chunks.Count; }
        }

        /// <summary>The chunk of a block coordinate.</summary>
        public static ChunkKey ChunkOf(int x, int y, int z)
        {
            return new ChunkKey(x >> ChunkBits, y >> ChunkBits, z >> ChunkBits);
        }

        /// <summary>The index of a block inside its chunk: lx + 16·(ly + 16·lz) of its local coordinates.</summary>
        public static int IndexInChunk(int x, int y, int z)
        {
            return (x & Mask) + ChunkSide * ((y & Mask) + ChunkSide * (z & Mask));
        }

        /// <summary>The block kind at (x, y, z); 0 when empty.</summary>
        public byte Get(int x, int y, int z)
        {
            Chunk c;
            return chunks.TryGetValue(ChunkOf(x, y, z), out c) ? c.Kinds[IndexInChunk(x, y, z)] : (byte)0;
        }

        /// <summary>Sets the block at (x, y, z) to kind (0 removes it); returns whether anything changed.</summary>
        public bool Set(int x, int y, int z, byte kind)
        {
            ChunkKey key = ChunkOf(x, y, z);
            Chunk c;
            if (!chunks.TryGetValue(key, out c))
            {
                if (kind == 0)
                {
                    return false;
                }
                c = new Chunk();
                chunks[key] = c;
            }
            int i = IndexInChunk(x, y, z);
            byte old = c.Kinds[i];
            if (old == kind)
            {
                return false;
            }
            c.Kinds[i] = kind;
            if (old == 0)
            {
                c.Count++;
                Blocks++;
            }
            else if (kind == 0)
            {
                c.Count--;
                Blocks--;
                if (c.Count == 0)
                {
                    chunks.Remove(key);
                }
            }
            return true;
        }

        /// <summary>The PCG stream of world generation ("world" in ASCII), as in the Go reference.</summary>
        public const ulong GenerateStream = 0x776f726c64UL;

        /// <summary>
        /// A world of n blocks of terrain: columns of height 1..3 (seeded) in a square around the origin,
        /// like a flat Minecraft-style map, at y &lt; 0 so that players stand at y = 0. The same seed gives
        /// the same world as the Go reference (same generator, same draws).
        /// </summary>
        public static World Generate(int n, ulong seed)
        {
            var rng = new Rng(seed, GenerateStream);
            if (n < 0)
            {
                throw new ArgumentOutOfRangeException("n", n, "world objects must be >= 0");
            }
            var w = new World();
            int side = (int)Math.Ceiling(Math.Sqrt(n / 2.0));
            int placed = 0;
            for (int x = -side / 2; placed < n; x++)
            {
                for (int z = -side / 2; z < side - side / 2 && placed < n; z++)
                {
                    int h = 1 + rng.NextInt(3);
                    for (int y = -1; y >= -h && placed < n; y--)
                    {
                        if (w.Set(x, y, z, (byte)(1 + rng.NextInt(8))))
                        {
                            placed++;
                        }
                    }
                }
            }
            return w;
        }

        /// <summary>The chunks in the snapshot's stable order (x, then y, then z).</summary>
        public List<ChunkKey> SortedChunks()
        {
            var keys = new List<ChunkKey>(chunks.Keys);
            keys.Sort();
            return keys;
        }

        /// <summary>
        /// The whole world as WorldChunk messages (reliable), one per chunk in the stable order, each at most
        /// 23 + 3·4096 bytes. The server caches it until the world changes.
        /// </summary>
        public List<byte[]> Snapshot()
        {
            List<ChunkKey> keys = SortedChunks();
            var messages = new List<byte[]>(keys.Count);
            var blocks = new List<ChunkBlock>(ChunkVolume);
            var buf = new WireBuffer(Wire.WorldChunkHeaderBytes + 3 * ChunkVolume);
            for (int i = 0; i < keys.Count; i++)
            {
                ChunkKey k = keys[i];
                byte[] kinds = chunks[k].Kinds;
                blocks.Clear();
                for (int idx = 0; idx < ChunkVolume; idx++)
                {
                    if (kinds[idx] != 0)
                    {
                        blocks.Add(new ChunkBlock((ushort)idx, kinds[idx]));
                    }
                }
                buf.Clear();
                Wire.AppendWorldChunk(buf, new WorldChunk
                {
                    Seq = (uint)i,
                    Total = (uint)keys.Count,
                    CX = k.X,
                    CY = k.Y,
                    CZ = k.Z,
                    Blocks = blocks,
                });
                messages.Add(buf.ToArray());
            }
            return messages;
        }

        /// <summary>
        /// Copies one chunk's blocks as (index, kind) pairs in index order into the given arrays (each at
        /// least <see cref="ChunkVolume"/> long) and returns how many there are; 0 for an empty chunk.
        /// </summary>
        public int ChunkBlocks(ChunkKey key, ushort[] indices, byte[] kinds)
        {
            Chunk c;
            if (!chunks.TryGetValue(key, out c))
            {
                return 0;
            }
            int n = 0;
            for (int i = 0; i < ChunkVolume; i++)
            {
                byte k = c.Kinds[i];
                if (k != 0)
                {
                    indices[n] = (ushort)i;
                    kinds[n] = k;
                    n++;
                }
            }
            return n;
        }
    }
}
