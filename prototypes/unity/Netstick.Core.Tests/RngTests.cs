using System;
using System.Collections.Generic;
using NUnit.Framework;

namespace Netstick.Core.Tests
{
    [TestFixture]
    public class RngTests
    {
        // Values Go's math/rand/v2 gives for the same seeds (rand.New(rand.NewPCG(a, b))): the first
        // three Uint64 of PCG(1, 2) are those of Go's own pcg_test.go.
        [Test]
        public void MatchesGosPcg()
        {
            var r = new Rng(1, 2);
            Assert.AreEqual(14192431797130687760UL, r.NextUInt64());
            Assert.AreEqual(11371241257079532652UL, r.NextUInt64());
            Assert.AreEqual(14470142590855381128UL, r.NextUInt64());

            r = new Rng(7, 0x776f726c64); // the reference's world generator stream
            Assert.AreEqual(0.53720713735310432, r.NextDouble());
            Assert.AreEqual(0, r.NextInt(3));
            Assert.AreEqual(2, r.NextInt(3));
            Assert.AreEqual(404428, r.NextInt(1000003));
            Assert.AreEqual(6945886L, r.NextLong(16666666));

            Assert.AreEqual(2026394963899587562UL, new Rng(ulong.MaxValue, 5).NextUInt64());
        }

        [Test]
        public void SameSeedSameSequence()
        {
            var a = new Rng(42);
            var b = new Rng(42);
            var c = new Rng(43);
            bool differs = false;
            for (int i = 0; i < 1000; i++)
            {
                ulong x = a.NextUInt64();
                Assert.AreEqual(x, b.NextUInt64());
                differs |= x != c.NextUInt64();
            }
            Assert.IsTrue(differs);
        }

        [Test]
        public void DeriveIsIndependentOfWhatWasDrawn()
        {
            var a = new Rng(9);
            var b = new Rng(9);
            b.NextUInt64();
            Assert.AreEqual(a.Derive("phase", 3).NextUInt64(), b.Derive("phase", 3).NextUInt64());
            var seen = new HashSet<ulong>
            {
                a.Derive("phase", 3).NextUInt64(), a.Derive("phase", 4).NextUInt64(),
                a.Derive("walk", 3).NextUInt64(), new Rng(10).Derive("phase", 3).NextUInt64(),
            };
            Assert.AreEqual(4, seen.Count, "stream, id and seed each change the sequence");
        }

        [Test]
        public void RangesHold()
        {
            var r = new Rng(5);
            var counts = new int[6];
            for (int i = 0; i < 60000; i++)
            {
                double d = r.NextDouble();
                Assert.IsTrue(d >= 0 && d < 1);
                counts[r.NextInt(6)]++;
                long l = r.NextLong(long.MaxValue);
                Assert.IsTrue(l >= 0);
            }
            foreach (int n in counts)
            {
                Assert.That(n, Is.InRange(9000, 11000), "roughly uniform");
            }
            Assert.AreEqual(0, r.NextInt(1));
            Assert.Throws<ArgumentOutOfRangeException>(() => r.NextInt(0));
            Assert.Throws<ArgumentOutOfRangeException>(() => r.NextLong(-1));
        }
    }
}
