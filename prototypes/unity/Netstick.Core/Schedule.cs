using System;
using System.Collections.Generic;

namespace Netstick.Core
{
    /// <summary>
    /// Runs tasks in deadline order on the host's thread (the port of the Go reference's sched.Dispatcher
    /// without its thread): the host calls <see cref="RunDue"/> and then waits until <see cref="WakeNs"/>.
    /// A task never runs before its due time; the send slack only lets a wake-up wait for tasks due soon
    /// after the first one, so that they share it (fewer wake-ups, lateness logged by the tasks).
    /// </summary>
    public sealed class Schedule
    {
        private struct Entry
        {
            public long DueNs;
            public long Order; // ties run in the order added, so equal phases stay deterministic
            public IScheduledTask Task;
        }

        private readonly List<Entry> heap = new List<Entry>();
        private long added;

        /// <summary>How long a wake-up may wait past the earliest deadline (CONTRACT.md -send-slack-us).</summary>
        public long SlackNs { get; private set; }

        public Schedule(long slackNs)
        {
            if (slackNs < 0)
            {
                throw new ArgumentOutOfRangeException("slackNs", slackNs, "send slack must be >= 0 ns");
            }
            SlackNs = slackNs;
        }

        /// <summary>Tasks still scheduled.</summary>
        public int Count
        {
            get { return heap.Count; }
        }

        /// <summary>The earliest due time, or long.MaxValue when nothing is scheduled.</summary>
        public long NextDueNs
        {
            get { return heap.Count == 0 ? long.MaxValue : heap[0].DueNs; }
        }

        /// <summary>When the host should run <see cref="RunDue"/> next: the earliest due time plus the slack.</summary>
        public long WakeNs
        {
            get
            {
                long due = NextDueNs;
                return due == long.MaxValue || due > long.MaxValue - SlackNs ? due : due + SlackNs;
            }
        }

        /// <summary>Schedules a task at the monotonic time <paramref name="dueNs"/>.</summary>
        public void Add(long dueNs, IScheduledTask task)
        {
            if (task == null)
            {
                throw new ArgumentNullException("task");
            }
            heap.Add(new Entry { DueNs = dueNs, Order = added++, Task = task });
            Up(heap.Count - 1);
        }

        /// <summary>Removes every task.</summary>
        public void Clear()
        {
            heap.Clear();
        }

        /// <summary>
        /// Runs every task due at or before the clock's reading, re-reading the clock after each one (a slow
        /// task makes later ones due). Returns how many ran.
        /// </summary>
        public int RunDue(Func<long> monoNs)
        {
            int ran = 0;
            long now = monoNs();
            while (heap.Count > 0 && heap[0].DueNs <= now)
            {
                Entry e = heap[0];
                long next;
                if (e.Task.Fire(e.DueNs, now, out next))
                {
                    e.DueNs = next;
                    e.Order = added++;
                    heap[0] = e;
                    Down(0);
                }
                else
                {
                    RemoveTop();
                }
                ran++;
                now = monoNs();
            }
            return ran;
        }

        /// <summary>
        /// The next due time of a periodic action: the schedule stays fixed (lateness never accumulates), but
        /// after a stall of more than a period the missed sends are skipped, not sent in a burst.
        /// </summary>
        public static long NextDue(long dueNs, long periodNs, long nowNs)
        {
            long next = dueNs + periodNs;
            if (periodNs > 0 && next < nowNs - periodNs)
            {
                next += (nowNs - next) / periodNs * periodNs;
            }
            return next;
        }

        /// <summary>
        /// A seeded random phase: a start time in [startNs, startNs + periodNs), drawn as the Go reference
        /// draws it (Int64N of the period), so the same seed gives the same phases.
        /// </summary>
        public static long Phase(Rng rng, long startNs, long periodNs)
        {
            return startNs + rng.NextLong(Math.Max(periodNs, 1));
        }

        private void RemoveTop()
        {
            int last = heap.Count - 1;
            heap[0] = heap[last];
            heap.RemoveAt(last);
            if (heap.Count > 0)
            {
                Down(0);
            }
        }

        private bool Less(int a, int b)
        {
            Entry x = heap[a], y = heap[b];
            return x.DueNs < y.DueNs || (x.DueNs == y.DueNs && x.Order < y.Order);
        }

        private void Swap(int a, int b)
        {
            Entry t = heap[a];
            heap[a] = heap[b];
            heap[b] = t;
        }

        private void Up(int i)
        {
            while (i > 0)
            {
                int parent = (i - 1) / 2;
                if (!Less(i, parent))
                {
                    return;
                }
                Swap(i, parent);
                i = parent;
            }
        }

        private void Down(int i)
        {
            int n = heap.Count;
            while (true)
            {
                int l = 2 * i + 1;
                if (l >= n)
                {
                    return;
                }
                int m = l;
                if (l + 1 < n && Less(l + 1, l))
                {
                    m = l + 1;
                }
                if (!Less(m, i))
                {
                    return;
                }
                Swap(i, m);
                i = m;
            }
        }
    }
}
