using System;

namespace Netstick.Core
{
    /// <summary>
    /// The probes of one player and kind (net or app) still to be matched with their echoes: a ring of
    /// <see cref="RingSize"/> slots, enough for 5 s of probes at 200 Hz, plus the counters of the
    /// <c>probes</c> event (CONTRACT.md §3.3).
    /// </summary>
    public sealed class ProbeBook
    {
        /// <summary>A probe unanswered for this long is lost (CONTRACT.md §3.3).</summary>
        public const long TimeoutNs = 5000000000L;

        /// <summary>Slots per book.</summary>
        public const int RingSize = 1024;

        private struct Slot
        {
            public uint Seq;
            public long SentUnixNs;
            public long SentMonoNs;
            public long LateNs; // -1: not scheduled (pingpong)
            public bool Used;
            public bool Answered;
        }

        private readonly Slot[] slots = new Slot[RingSize];

        /// <summary>The sequence number of the next probe.</summary>
        public uint Next { get; private set; }

        /// <summary>Probes sent.</summary>
        public long Sent { get; private set; }

        /// <summary>Probes whose echo arrived (late ones included).</summary>
        public long Echoed { get; private set; }

        /// <summary>Records a probe about to be sent and returns its sequence number.</summary>
        public uint Record(long sentUnixNs, long sentMonoNs, long lateNs)
        {
            uint seq = Next++;
            Sent++;
            slots[seq % RingSize] = new Slot
            {
                Seq = seq,
                SentUnixNs = sentUnixNs,
                SentMonoNs = sentMonoNs,
                LateNs = lateNs,
                Used = true,
            };
            return seq;
        }

        /// <summary>
        /// Matches an echo with its probe: false for a duplicate, a forged one or one too old to be in the
        /// ring; otherwise the probe's send times and lateness (-1: unscheduled).
        /// </summary>
        public bool Answer(uint seq, long sentMonoNs, out long sentUnixNs, out long lateNs)
        {
            int i = (int)(seq % RingSize);
            Slot s = slots[i];
            sentUnixNs = s.SentUnixNs;
            lateNs = s.LateNs;
            if (!s.Used || s.Seq != seq || s.Answered || s.SentMonoNs != sentMonoNs)
            {
                return false;
            }
            slots[i].Answered = true;
            Echoed++;
            return true;
        }

        /// <summary>
        /// The totals of the <c>probes</c> event at nowNs: echoed + lost + inflight = sent, where inflight
        /// are the unanswered probes younger than <see cref="TimeoutNs"/>.
        /// </summary>
        public void Totals(long nowNs, out long echoed, out long lost, out long inflight)
        {
            long young = 0;
            for (int i = 0; i < RingSize; i++)
            {
                if (slots[i].Used && !slots[i].Answered && nowNs - slots[i].SentMonoNs < TimeoutNs)
                {
                    young++;
                }
            }
            long unanswered = Sent - Echoed;
            inflight = Math.Min(young, unanswered);
            echoed = Echoed;
            lost = unanswered - inflight;
        }
    }
}
