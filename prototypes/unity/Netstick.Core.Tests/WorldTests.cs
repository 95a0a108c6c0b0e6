using System.Collections.Generic;
using NUnit.Framework;

namespace Netstick.Core.Tests
{
    [TestFixture]
    public class WorldTests
    {
        [Test]
        public void BlocksLandInChunksOf16WithFloorDivision()
        {
            Assert.AreEqual(new ChunkKey(-1, 0, 0), World.ChunkOf(-1, 0, 15));
            Assert.AreEqual(new ChunkKey(-1, -1, 1), World.ChunkOf(-16, -1, 16));
            Assert.AreEqual(15, World.IndexInChunk(-1, 0, 0));
            Assert.AreEqual(15 + 16 * 15 + 256 * 15, World.IndexInChunk(-1, -1, -1));
            Assert.AreEqual(new ChunkKey(int.MinValue >> 4, 0, 0), World.ChunkOf(int.MinValue, 0, 0));

            var w = new World();
            Assert.IsTrue(w.Set(-1, -1, -1, 5));
            Assert.IsFalse(w.Set(-1, -1, -1, 5));
            Assert.AreEqual(5, w.Get(-1, -1, -1));
            Assert.AreEqual(0, w.Get(-1, -1, -2));
            Assert.IsTrue(w.Set(0, 0, 0, 1));
            Assert.AreEqual(2, w.Blocks);
            Assert.AreEqual(2, w.Chunks);
            Assert.IsTrue(w.Set(-1, -1, -1, 0));
            Assert.IsFalse(w.Set(-1, -1, -1, 0));
            Assert.AreEqual(1, w.Blocks);
            Assert.AreEqual(1, w.Chunks); // an emptied chunk is dropped
        }

        [Test]
        public void GeneratedTerrainHasExactlyNBlocksBelowTheGroundAndFollowsTheSeed()
        {
            World a = World.Generate(7500, 1);
            Assert.AreEqual(7500, a.Blocks);
            World b = World.Generate(7500, 1);
            World c = World.Generate(7500, 2);
            List<byte[]> sa = a.Snapshot(), sb = b.Snapshot(), sc = c.Snapshot();
            Assert.AreEqual(sa.Count, sb.Count);
            for (int i = 0; i < sa.Count; i++)
            {
                CollectionAssert.AreEqual(sa[i], sb[i]);
            }
            bool differs = sa.Count != sc.Count;
            for (int i = 0; !differs && i < sa.Count; i++)
            {
                differs = !Equal(sa[i], sc[i]);
            }
            Assert.IsTrue(differs, "another seed gives another world");
            Assert.AreEqual(0, World.Generate(0, 1).Blocks);
        }

        private static bool Equal(byte[] x, byte[] y)
        {
            if (x.Length != y.Length)
            {
                return false;
            }
            for (int i = 0; i < x.Length; i++)
            {
                if (x[i] != y[i])
                {
                    return false;
                }
            }
            return true;
        }

        [Test]
        public void TheSnapshotDecodesToTheSameWorld()
        {
            World w = World.Generate(3000, 9);
            w.Set(40, 3, -40, 200);
            List<byte[]> snap = w.Snapshot();
            var back = new World();
            var blocks = new List<ChunkBlock>();
            uint total = 0;
            long lastKey = long.MinValue;
            for (int i = 0; i < snap.Count; i++)
            {
                WorldChunk m = Wire.DecodeWorldChunk(snap[i], snap[i].Length, blocks);
                Assert.AreEqual((uint)i, m.Seq);
                total = m.Total;
                Assert.LessOrEqual(snap[i].Length, Wire.WorldChunkHeaderBytes + 3 * World.ChunkVolume);
                foreach (ChunkBlock cb in m.Blocks)
                {
                    int lx = cb.Index % 16, ly = cb.Index / 16 % 16, lz = cb.Index / 256;
                    back.Set(m.CX * 16 + lx, m.CY * 16 + ly, m.CZ * 16 + lz, cb.Kind);
                }
                long key = ((long)m.CX << 42) + ((long)m.CY << 21) + m.CZ;
                Assert.Greater(key, lastKey, "chunks in x, y, z order");
                lastKey = key;
            }
            Assert.AreEqual((uint)snap.Count, total);
            Assert.AreEqual(w.Blocks, back.Blocks);
            Assert.AreEqual(200, back.Get(40, 3, -40));
            foreach (ChunkKey k in w.SortedChunks())
            {
                for (int i = 0; i < World.ChunkVolume; i++)
                {
                    int x = k.X * 16 + i % 16, y = k.Y * 16 + i / 16 % 16, z = k.Z * 16 + i / 256;
                    Assert.AreEqual(w.Get(x, y, z), back.Get(x, y, z));
                }
            }
        }
    }
}
