using System;

namespace Netstick.Core
{
    // The scheduled actions of a client's players (the Go reference's internal/client/workloads.go).
    // Each keeps its schedule with Schedule.NextDue: lateness never accumulates and an action overdue by
    // more than a period is skipped.

    /// <summary>Sends one kind of probe periodically: the periodic net/app probes and the stream workload.</summary>
    internal sealed class ProbeTask : IScheduledTask
    {
        private readonly ClientCore core;
        private readonly ClientPlayer player;
        private readonly byte kind;
        private readonly Channel channel;
        private readonly int size;
        private readonly long periodNs;

        public ProbeTask(ClientCore core, ClientPlayer player, byte kind, Channel channel, int size, long periodNs)
        {
            this.core = core;
            this.player = player;
            this.kind = kind;
            this.channel = channel;
            this.size = size;
            this.periodNs = periodNs;
        }

        public bool Fire(long dueNs, long nowNs, out long nextDueNs)
        {
            core.SendProbe(player, kind, channel, size, nowNs - dueNs, false);
            nextDueNs = Schedule.NextDue(dueNs, periodNs, nowNs);
            return true;
        }
    }

    /// <summary>
    /// Sends a player's first pingpong probe, then watches its chain: each echo sends the next probe
    /// (ClientCore.OnMessage), and a probe whose echo is still missing after the loss timeout is given up
    /// here and the next one sent, so a lost echo costs one timeout instead of the rest of the run.
    /// </summary>
    internal sealed class PingpongTask : IScheduledTask
    {
        private readonly ClientCore core;
        private readonly ClientPlayer player;
        private bool started;

        public PingpongTask(ClientCore core, ClientPlayer player)
        {
            this.core = core;
            this.player = player;
        }

        public bool Fire(long dueNs, long nowNs, out long nextDueNs)
        {
            if (!started)
            {
                started = true;
                core.SendPingpong(player);
                nextDueNs = nowNs + ProbeBook.TimeoutNs;
                return true;
            }
            ClientPlayer p = player;
            bool gaveUp = false;
            if (p.PingpongWaiting && nowNs - p.PingpongSentMonoNs >= ProbeBook.TimeoutNs)
            {
                p.PingpongWaiting = false;
                gaveUp = true;
            }
            if (gaveUp)
            {
                core.SendPingpong(p);
                nextDueNs = nowNs + ProbeBook.TimeoutNs;
                return true;
            }
            if (p.PingpongWaiting)
            {
                nextDueNs = p.PingpongSentMonoNs + ProbeBook.TimeoutNs;
                return true;
            }
            nextDueNs = nowNs + ProbeBook.TimeoutNs;
            return p.PingpongLeft > 0;
        }
    }

    /// <summary>Samples the library's own RTT estimate at 2 Hz (kind <c>lib</c>), when it keeps one.</summary>
    internal sealed class LibRttTask : IScheduledTask
    {
        public const long PeriodNs = 500000000L;

        private readonly ClientCore core;
        private readonly ClientPlayer player;

        public LibRttTask(ClientCore core, ClientPlayer player)
        {
            this.core = core;
            this.player = player;
        }

        public bool Fire(long dueNs, long nowNs, out long nextDueNs)
        {
            core.SampleLibraryRtt(player);
            nextDueNs = Schedule.NextDue(dueNs, PeriodNs, nowNs);
            return true;
        }
    }

    /// <summary>A random walk at a fixed speed inside a square, one input per tick (wander).</summary>
    internal sealed class WanderTask : IScheduledTask
    {
        private readonly ClientCore core;
        private readonly ClientPlayer player;
        private readonly long periodNs;
        private readonly double stepM;
        private readonly double halfM;
        private readonly double turnProbability; // a new random heading about once a second

        public WanderTask(ClientCore core, ClientPlayer player, long periodNs, double stepM, double halfM,
            double turnProbability)
        {
            this.core = core;
            this.player = player;
            this.periodNs = periodNs;
            this.stepM = stepM;
            this.halfM = halfM;
            this.turnProbability = turnProbability;
        }

        public bool Fire(long dueNs, long nowNs, out long nextDueNs)
        {
            ClientPlayer p = player;
            if (p.Rng.NextDouble() < turnProbability)
            {
                p.Yaw = (float)(p.Rng.NextDouble() * 2 * Math.PI);
            }
            double x = p.Pos.X + stepM * Math.Cos(p.Yaw);
            double z = p.Pos.Z + stepM * Math.Sin(p.Yaw);
            if (x < -halfM || x > halfM || z < -halfM || z > halfM)
            {
                p.Yaw = (float)(((double)p.Yaw + Math.PI) % (2 * Math.PI)); // turn back at the edge
                x = Math.Max(-halfM, Math.Min(halfM, x));
                z = Math.Max(-halfM, Math.Min(halfM, z));
            }
            p.Pos.X = (float)x;
            p.Pos.Z = (float)z;
            core.SendInput(p);
            nextDueNs = Schedule.NextDue(dueNs, periodNs, nowNs);
            return true;
        }
    }

    /// <summary>
    /// active: every interval the player jumps (1 m, sent as its transform) and places a block in the cell
    /// its feet were in, until it placed its blocks, or for ever with continuous=true.
    /// </summary>
    internal sealed class ActiveTask : IScheduledTask
    {
        private readonly ClientCore core;
        private readonly ClientPlayer player;
        private readonly long periodNs;
        private readonly bool continuous;
        private int left;

        public ActiveTask(ClientCore core, ClientPlayer player, long periodNs, int blocks, bool continuous)
        {
            this.core = core;
            this.player = player;
            this.periodNs = periodNs;
            left = blocks;
            this.continuous = continuous;
        }

        public bool Fire(long dueNs, long nowNs, out long nextDueNs)
        {
            ClientPlayer p = player;
            var feet = new BlockPos((int)Math.Floor(p.Pos.X), (int)Math.Floor(p.Pos.Y), (int)Math.Floor(p.Pos.Z));
            p.Pos.Y++; // land on the new block
            core.SendInput(p);
            core.SendBlockAction(p, Wire.OpPlace, feet);
            left--;
            nextDueNs = Schedule.NextDue(dueNs, periodNs, nowNs);
            return continuous || left > 0;
        }
    }

    /// <summary>
    /// rpc-toggle: places, then removes, a block at the player's own spot 1 m beside its spawn point
    /// (spawn points are 2 m apart, so spots never collide).
    /// </summary>
    internal sealed class ToggleTask : IScheduledTask
    {
        private readonly ClientCore core;
        private readonly ClientPlayer player;
        private readonly long periodNs;
        private readonly BlockPos spot;
        private bool placed;

        public ToggleTask(ClientCore core, ClientPlayer player, long periodNs, BlockPos spot)
        {
            this.core = core;
            this.player = player;
            this.periodNs = periodNs;
            this.spot = spot;
        }

        public bool Fire(long dueNs, long nowNs, out long nextDueNs)
        {
            byte op = placed ? Wire.OpRemove : Wire.OpPlace;
            placed = !placed;
            core.SendBlockAction(player, op, spot);
            nextDueNs = Schedule.NextDue(dueNs, periodNs, nowNs);
            return true;
        }
    }
}
