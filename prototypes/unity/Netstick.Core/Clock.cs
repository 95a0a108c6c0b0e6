using System;
using System.Diagnostics;

namespace Netstick.Core
{
    /// <summary>
    /// The two clocks of the contract: a monotonic clock for every duration, deadline and RTT, and
    /// the wall clock (Unix-epoch ns, UTC) for log timestamps.
    /// </summary>
    public static class Clock
    {
        private static readonly long Frequency = Stopwatch.Frequency;
        // Wall time is read once and then advanced by the monotonic clock, so timestamps within a
        // process never jump (an NTP step would otherwise reorder rows against their durations).
        private static readonly long StartMonoNs;
        private static readonly long StartWallNs;

        static Clock()
        {
            StartMonoNs = MonoNs();
            StartWallNs = (DateTime.UtcNow.Ticks - UnixEpochTicks) * 100;
        }

        private const long UnixEpochTicks = 621355968000000000L; // new DateTime(1970, 1, 1).Ticks

        /// <summary>Monotonic nanoseconds (arbitrary origin), from <see cref="Stopwatch"/>.</summary>
        public static long MonoNs()
        {
            long ts = Stopwatch.GetTimestamp();
            if (Frequency == 1000000000L)
            {
                return ts;
            }
            // Split to avoid overflowing ts * 1e9 for large timestamps.
            long whole = ts / Frequency;
            long rest = ts % Frequency;
            return whole * 1000000000L + rest * 1000000000L / Frequency;
        }

        /// <summary>Wall clock, nanoseconds since the Unix epoch (UTC), never jumping within a process.</summary>
        public static long WallNs()
        {
            return StartWallNs + (MonoNs() - StartMonoNs);
        }

        /// <summary>The wall-clock time of a monotonic reading taken earlier in this process.</summary>
        public static long WallNsAt(long monoNs)
        {
            return StartWallNs + (monoNs - StartMonoNs);
        }
    }
}
