using System;

namespace Netstick.Core
{
    /// <summary>
    /// The seeded PRNG of every random choice (CONTRACT.md §1 -seed: same seed, same choices): Go's
    /// math/rand/v2 PCG (128-bit LCG with the DXSM output function), bit for bit, with Go's Float64
    /// and IntN, so that <c>new Rng(seed, stream)</c> draws exactly what the reference's
    /// <c>rand.New(rand.NewPCG(seed, stream))</c> draws. Not thread-safe: one per player or task.
    /// </summary>
    public sealed class Rng
    {
        private const ulong MulHi = 2549297995355413924UL;
        private const ulong MulLo = 4865540595714422341UL;
        private const ulong IncHi = 6364136223846793005UL;
        private const ulong IncLo = 1442695040888963407UL;
        private const ulong CheapMul = 0xda942042e4dd58b5UL;

        private ulong hi;
        private ulong lo;
        private readonly ulong seed;

        /// <summary>A generator for seed (stream 0).</summary>
        public Rng(ulong seed) : this(seed, 0) { }

        /// <summary>Go's <c>rand.NewPCG(seed, stream)</c>: the reference seeds player k's generator with (seed, k).</summary>
        public Rng(ulong seed, ulong stream)
        {
            this.seed = seed;
            hi = seed;
            lo = stream;
        }

        /// <summary>
        /// An independent generator for a named purpose and an id (e.g. <c>("phase", player)</c>), from
        /// this generator's seed: the same (seed, stream, id) always gives the same sequence, whatever was
        /// drawn before.
        /// </summary>
        public Rng Derive(string stream, long id)
        {
            // FNV-1a of the name, mixed with the id through SplitMix64's finaliser, as the PCG stream.
            ulong h = 14695981039346656037UL;
            foreach (char c in stream)
            {
                h ^= c;
                h *= 1099511628211UL;
            }
            return new Rng(seed, Mix(h ^ Mix((ulong)id)));
        }

        private static ulong Mix(ulong z)
        {
            z += 0x9e3779b97f4a7c15UL;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9UL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebUL;
            return z ^ (z >> 31);
        }

        /// <summary>64 random bits (Go's PCG.Uint64).</summary>
        public ulong NextUInt64()
        {
            // state = state * mul + inc, on 128 bits
            ulong h;
            ulong l = Mul64(lo, MulLo, out h);
            h += hi * MulLo + lo * MulHi;
            ulong sum = l + IncLo;
            ulong carry = sum < l ? 1UL : 0UL;
            h = h + IncHi + carry;
            lo = sum;
            hi = h;

            // DXSM: double xorshift multiply
            ulong x = hi;
            x ^= x >> 32;
            x *= CheapMul;
            x ^= x >> 48;
            x *= lo | 1;
            return x;
        }

        /// <summary>A double in [0, 1) (Go's Rand.Float64).</summary>
        public double NextDouble()
        {
            return (double)((NextUInt64() << 11) >> 11) / (1UL << 53);
        }

        /// <summary>An integer in [0, n) for n &gt; 0, unbiased (Go's Rand.IntN).</summary>
        public int NextInt(int n)
        {
            if (n <= 0)
            {
                throw new ArgumentOutOfRangeException("n", n, "NextInt needs n > 0");
            }
            return (int)UInt64N((ulong)n);
        }

        /// <summary>An integer in [0, n) for n &gt; 0, unbiased (Go's Rand.Int64N).</summary>
        public long NextLong(long n)
        {
            if (n <= 0)
            {
                throw new ArgumentOutOfRangeException("n", n, "NextLong needs n > 0");
            }
            return (long)UInt64N((ulong)n);
        }

        // Lemire's multiply-and-reject, as Go's uint64n on 64-bit machines.
        private ulong UInt64N(ulong n)
        {
            if ((n & (n - 1)) == 0)
            {
                return NextUInt64() & (n - 1);
            }
            ulong hiPart;
            ulong loPart = Mul64(NextUInt64(), n, out hiPart);
            if (loPart < n)
            {
                ulong thresh = (0UL - n) % n;
                while (loPart < thresh)
                {
                    loPart = Mul64(NextUInt64(), n, out hiPart);
                }
            }
            return hiPart;
        }

        /// <summary>The 128-bit product of x and y: returns the low 64 bits, high in hi.</summary>
        private static ulong Mul64(ulong x, ulong y, out ulong high)
        {
            const ulong mask32 = 0xffffffffUL;
            ulong x0 = x & mask32, x1 = x >> 32;
            ulong y0 = y & mask32, y1 = y >> 32;
            ulong w0 = x0 * y0;
            ulong t = x1 * y0 + (w0 >> 32);
            ulong w1 = t & mask32;
            ulong w2 = t >> 32;
            w1 += x0 * y1;
            high = x1 * y1 + w2 + (w1 >> 32);
            return x * y;
        }
    }
}
