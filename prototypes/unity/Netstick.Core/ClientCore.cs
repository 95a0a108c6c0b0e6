using System;
using System.Collections.Generic;
using System.Globalization;

namespace Netstick.Core
{
    /// <summary>
    /// The player emulator of a client process (CONTRACT.md §2–§5), ported from the Go reference
    /// (internal/client): connects its players staggered and bounded, says hello until welcomed, then plays
    /// the workload with seeded phases, probes net/app/lib, logs the once-only events, drains at most 1 s
    /// at the end and writes the <c>probes</c> events. It owns no thread: the host calls <see cref="Step"/>
    /// in a loop (or per frame) and prints CONNECTED once <see cref="AllConnected"/> turns true.
    /// </summary>
    public sealed partial class ClientCore : IClientHandler
    {
        /// <summary>After the workload, wait at most this long for echoes in flight (CONTRACT.md §3.3).</summary>
        public const long DrainNs = 1000000000L;

        /// <summary>How often the drain looks whether every probe was answered.</summary>
        public const long DrainCheckNs = 10000000L;

        /// <summary>How long a player waits for its welcome before saying hello again (transports without reliability).</summary>
        public const long HelloRetryNs = 250000000L;

        /// <summary>
        /// The monotonic clock (ns) of every deadline and RTT: <see cref="Clock.MonoNs"/>, replaced by tests that
        /// need to move time on (a 5 s probe timeout, a connect timeout) without waiting for it.
        /// </summary>
        public Func<long> MonoClock { get; set; } = Clock.MonoNs;

        /// <summary>Malformed messages are reported once a second.</summary>
        public const long MalformedPeriodNs = 1000000000L;

        private static readonly string[] KindNames = { "net", "app" };

        private enum Phase
        {
            Created,
            Connecting,
            Running,
            Draining,
            Done,
        }

        private readonly Options options;
        private readonly Workload workload;
        private readonly IClientTransport transport;
        private readonly RttLog rtt;
        private readonly EventLog events;
        private readonly ClientPlayer[] players;
        private readonly Schedule schedule;
        private readonly bool repeatHello;
        private readonly long connectIntervalNs;
        private readonly long connectTimeoutNs;
        private readonly WireBuffer buf = new WireBuffer(512);
        private readonly List<ChunkBlock> chunkBuf = new List<ChunkBlock>(World.ChunkVolume);
        private readonly List<Transform> stateBuf = new List<Transform>();
        private readonly List<BlockChange> changeBuf = new List<BlockChange>();

        private Phase phase = Phase.Created;
        private long firstAttemptMonoNs;
        private int nextToConnect;
        private int handshakes; // in flight
        private int connectedCount;
        private long runEndMonoNs = long.MaxValue;
        private long drainEndMonoNs;
        private long nextDrainCheckNs;
        private long nextMalformedFlushNs;
        private readonly MalformedCounter malformed = new MalformedCounter();
        private string lostError;
        private string connectError;
        private readonly MessageLimits limits;

        public ClientCore(Options options, IClientTransport transport, RttLog rtt, EventLog events)
        {
            if (options == null || transport == null || rtt == null || events == null)
            {
                throw new ArgumentNullException(options == null ? "options" : transport == null ? "transport" : rtt == null ? "rtt" : "events");
            }
            this.options = options;
            workload = options.ResolvedWorkload ?? Workloads.Resolve(options.Workload ?? "idle", options.Params);
            this.transport = transport;
            limits = transport.Limits ?? MessageLimits.Contract;
            limits.CheckProbe(workload, transport.Name);
            this.rtt = rtt;
            this.events = events;
            players = new ClientPlayer[options.Players];
            for (int i = 0; i < players.Length; i++)
            {
                players[i] = new ClientPlayer((uint)(options.FirstPlayer + i), i, options.Seed);
            }
            schedule = new Schedule((long)(options.SendSlackUs * 1e3));
            repeatHello = !NativeReliable(transport);
            connectIntervalNs = (long)(options.ConnectIntervalMs * 1e6);
            connectTimeoutNs = (long)(options.ConnectTimeoutS * 1e9);
            ExitReason = "";
        }

        /// <summary>
        /// Whether the transport's reliable channel is reliable natively (effective_channels says so): then
        /// one hello is enough, and repeating it would only queue a second world snapshot behind the first.
        /// </summary>
        public static bool NativeReliable(IClientTransport transport)
        {
            string carried;
            IDictionary<string, string> eff = transport.EffectiveChannels;
            return eff != null && eff.TryGetValue("reliable", out carried) && carried != null
                && carried.StartsWith("reliable", StringComparison.Ordinal);
        }

        /// <summary>True once every player got its welcome; the host then prints CONNECTED.</summary>
        public bool AllConnected { get; private set; }

        /// <summary>Seconds from the first connection attempt to the last player connected.</summary>
        public double ConnectS { get; private set; }

        /// <summary>True once the client is done; <see cref="ExitCode"/> and <see cref="ExitReason"/> say how.</summary>
        public bool Finished { get; private set; }

        /// <summary>The exit code of CONTRACT.md §2 (valid once <see cref="Finished"/>).</summary>
        public int ExitCode { get; private set; }

        /// <summary>Why the client finished; for a failure the one stderr line (e.g. which player could not connect).</summary>
        public string ExitReason { get; private set; }

        /// <summary>Players of this process.</summary>
        public int Players
        {
            get { return players.Length; }
        }

        /// <summary>Starts connecting the players (the first at once, then -connect-interval-ms apart).</summary>
        public void Start()
        {
            if (phase != Phase.Created)
            {
                throw new InvalidOperationException("ClientCore.Start called twice");
            }
            phase = Phase.Connecting;
            firstAttemptMonoNs = MonoClock();
            nextMalformedFlushNs = firstAttemptMonoNs + MalformedPeriodNs;
            StartConnects(firstAttemptMonoNs);
        }

        /// <summary>
        /// Stops the workload (SIGTERM, SIGINT): while connecting the client finishes at once, while playing
        /// it drains for at most 1 s (keep calling <see cref="Step"/>) and then finishes with exit 0.
        /// </summary>
        public void Stop(string reason)
        {
            switch (phase)
            {
                case Phase.Created:
                case Phase.Connecting:
                    Finish(Core.ExitCode.Ok, "stopped while connecting: " + reason, false);
                    break;
                case Phase.Running:
                    BeginDrain(MonoClock());
                    break;
            }
        }

        /// <summary>
        /// Delivers what arrived, runs the connects, the due actions and the end of the run; returns how
        /// many ns the host may wait before the next call (0: at once). Once <see cref="Finished"/>,
        /// every player is disconnected and the logs are flushed.
        /// nowMonoNs is the host's reading of <see cref="Clock.MonoNs"/>; the core reads
        /// <see cref="MonoClock"/> again wherever a time is logged, so a slow host never skews it.
        /// </summary>
        public long Step(long nowMonoNs)
        {
            if (phase == Phase.Created || phase == Phase.Done)
            {
                return 10000000L;
            }
            transport.Poll(this);
            long now = MonoClock();
            if (phase == Phase.Connecting)
            {
                StepConnecting(now);
            }
            if (lostError != null && phase != Phase.Done && phase != Phase.Draining)
            {
                events.Write(null, "server_lost", "", "error=" + LineLog.Sanitize(lostError));
                Finish(Core.ExitCode.Lost, lostError, true);
                return 0;
            }
            if (phase == Phase.Running)
            {
                schedule.RunDue(MonoClock);
                now = MonoClock();
                if (now >= runEndMonoNs)
                {
                    BeginDrain(now);
                }
            }
            if (phase == Phase.Draining && (now >= drainEndMonoNs || now >= nextDrainCheckNs))
            {
                // Counting the probes in flight walks every player's books: every 10 ms, not on every echo.
                nextDrainCheckNs = now + DrainCheckNs;
                if (now >= drainEndMonoNs || Inflight(now) == 0)
                {
                    Finish(Core.ExitCode.Ok, "finished", true);
                    return 0;
                }
            }
            if (now >= nextMalformedFlushNs)
            {
                malformed.Flush(events);
                nextMalformedFlushNs = now + MalformedPeriodNs;
            }
            events.FlushIfDue();
            rtt.FlushIfDue();
            return Math.Max(0, WakeNs(now) - now);
        }

        private long WakeNs(long now)
        {
            long wake = nextMalformedFlushNs;
            switch (phase)
            {
                case Phase.Connecting:
                    if (nextToConnect < players.Length && handshakes < options.ConnectParallel)
                    {
                        wake = Math.Min(wake, firstAttemptMonoNs + nextToConnect * connectIntervalNs);
                    }
                    foreach (ClientPlayer p in players)
                    {
                        if (p.Connecting)
                        {
                            wake = Math.Min(wake, p.ConnectStartMonoNs + connectTimeoutNs);
                            wake = Math.Min(wake, p.NextHelloMonoNs);
                        }
                    }
                    break;
                case Phase.Running:
                    wake = Math.Min(wake, Math.Min(schedule.WakeNs, runEndMonoNs));
                    break;
                case Phase.Draining:
                    // Probes are matched in Poll; look again soon rather than wait for the drain's end.
                    wake = Math.Min(drainEndMonoNs, nextDrainCheckNs);
                    break;
            }
            return wake;
        }

        // ---- connecting ----

        private void StartConnects(long now)
        {
            while (nextToConnect < players.Length && handshakes < options.ConnectParallel
                && now >= firstAttemptMonoNs + nextToConnect * connectIntervalNs)
            {
                ClientPlayer p = players[nextToConnect++];
                p.Connecting = true;
                p.ConnectStartMonoNs = MonoClock();
                handshakes++;
                transport.Connect((int)p.Id, options.Host, options.Port);
            }
        }

        private void StepConnecting(long now)
        {
            StartConnects(now);
            foreach (ClientPlayer p in players)
            {
                if (!p.Connecting)
                {
                    continue;
                }
                if (now - p.ConnectStartMonoNs >= connectTimeoutNs)
                {
                    ConnectFailed(p, p.TransportUp ? "no welcome from the server" : "no connection to the server");
                    continue;
                }
                if (p.TransportUp && now >= p.NextHelloMonoNs)
                {
                    SendHello(p, now);
                }
            }
            if (connectError != null)
            {
                Finish(Core.ExitCode.Connect, connectError, false);
                return;
            }
            if (connectedCount == players.Length && !AllConnected)
            {
                AllConnected = true;
                long t = MonoClock();
                ConnectS = (t - firstAttemptMonoNs) / 1e9;
                BeginRun(t);
            }
        }

        private void ConnectFailed(ClientPlayer p, string error)
        {
            p.Connecting = false;
            handshakes--;
            events.Write((int)p.Id, "connect_failed", "", "error=" + LineLog.Sanitize(error));
            if (connectError == null)
            {
                // The one line a failed run leaves on stderr: which player, over which transport, and the
                // budget it had (CONTRACT.md §2, exit code 4).
                connectError = string.Format(CultureInfo.InvariantCulture,
                    "player {0} over {1}: player could not connect within -connect-timeout-s {2}: {3}",
                    p.Id, transport.Name, options.ConnectTimeoutS.ToString("R", CultureInfo.InvariantCulture), error);
            }
        }

        private void SendHello(ClientPlayer p, long now)
        {
            buf.Clear();
            Wire.AppendHello(buf, new Hello { Player = p.Id, Schema = Wire.SchemaVersion });
            if (!TrySend(p, buf, Channel.Reliable))
            {
                return;
            }
            p.NextHelloMonoNs = repeatHello ? now + HelloRetryNs : long.MaxValue;
        }

        // ---- running ----

        private void BeginRun(long now)
        {
            phase = Phase.Running;
            if (options.DurationS > 0)
            {
                runEndMonoNs = now + (long)(options.DurationS * 1e9);
            }
            long start = now + 1000000L;
            foreach (ClientPlayer p in players)
            {
                SchedulePlayer(p, start);
            }
        }

        private static long HzNs(double hz)
        {
            return (long)Math.Round(1e9 / hz);
        }

        /// <summary>
        /// Adds a player's tasks, each at a seeded random phase within its first period, drawn in the Go
        /// reference's order (net, app, lib, workload) so that the same seed gives the same phases.
        /// </summary>
        private void SchedulePlayer(ClientPlayer p, long startNs)
        {
            string w = workload.Name;
            if (options.ProbeHz > 0)
            {
                long period = HzNs(options.ProbeHz);
                if (w != "stream" && w != "pingpong")
                {
                    schedule.Add(Schedule.Phase(p.Rng, startNs, period),
                        new ProbeTask(this, p, Wire.ProbeNet, Channel.Unreliable, Wire.ProbeHeaderBytes, period));
                }
                schedule.Add(Schedule.Phase(p.Rng, startNs, period),
                    new ProbeTask(this, p, Wire.ProbeApp, Channel.Unreliable, Wire.ProbeHeaderBytes, period));
            }
            if (!double.IsNaN(transport.LibraryRttUs((int)p.Id)))
            {
                schedule.Add(Schedule.Phase(p.Rng, startNs, LibRttTask.PeriodNs), new LibRttTask(this, p));
            }
            long tickNs = HzNs(options.TickRateHz);
            switch (w)
            {
                case "stream":
                    {
                        long period = HzNs(workload.RateHz);
                        schedule.Add(Schedule.Phase(p.Rng, startNs, period),
                            new ProbeTask(this, p, Wire.ProbeNet, workload.Channel, workload.SizeBytes, period));
                        break;
                    }
                case "pingpong":
                    p.PingpongLeft = workload.Count;
                    p.PingpongChannel = workload.Channel;
                    p.PingpongSize = workload.SizeBytes;
                    schedule.Add(Schedule.Phase(p.Rng, startNs, 100000000L), new PingpongTask(this, p));
                    break;
                case "wander":
                    schedule.Add(Schedule.Phase(p.Rng, startNs, tickNs), new WanderTask(this, p, tickNs,
                        workload.SpeedMps / options.TickRateHz, workload.AreaM / 2, 1 / options.TickRateHz));
                    break;
                case "active":
                    {
                        long period = (long)(workload.IntervalS * 1e9);
                        schedule.Add(Schedule.Phase(p.Rng, startNs, period),
                            new ActiveTask(this, p, period, workload.Blocks, workload.Continuous));
                        break;
                    }
                case "rpc-toggle":
                    {
                        long period = (long)(workload.IntervalS * 1e9);
                        Vec3 spawn = ServerCore.SpawnPoint(p.Id);
                        var spot = new BlockPos((int)spawn.X + 1, 0, (int)spawn.Z);
                        schedule.Add(Schedule.Phase(p.Rng, startNs, period), new ToggleTask(this, p, period, spot));
                        break;
                    }
            }
        }

        private bool TrySend(ClientPlayer p, WireBuffer message, Channel channel)
        {
            if (p.Gone)
            {
                return false;
            }
            string tooLarge = limits.Problem(channel, message.Length, transport.Name);
            if (tooLarge != null)
            {
                throw new MessageTooLargeException("client: message type " + message.Data[0].ToString(CultureInfo.InvariantCulture)
                    + " of " + tooLarge);
            }
            try
            {
                transport.Send((int)p.Id, message.Data, message.Length, channel);
                return true;
            }
            catch (Exception e)
            {
                if (!(e is ArgumentException || e is InvalidOperationException || e is System.IO.IOException
                    || e is System.Net.Sockets.SocketException || e is ObjectDisposedException))
                {
                    throw;
                }
                if (!p.SendFailed)
                {
                    p.SendFailed = true;
                    events.Write((int)p.Id, "error", "", "error=" + LineLog.Sanitize(e.Message));
                }
                return false;
            }
        }

        /// <summary>Sends one probe; lateNs &lt; 0 marks an unscheduled send (pingpong).</summary>
        internal void SendProbe(ClientPlayer p, byte kind, Channel channel, int size, long lateNs, bool pingpong)
        {
            long now = MonoClock();
            uint seq = p.Books[kind].Record(Clock.WallNsAt(now), now, lateNs);
            if (pingpong)
            {
                // The probe waited for is set before the transport may echo it.
                p.PingpongSeq = seq;
                p.PingpongSentMonoNs = now;
                p.PingpongWaiting = true;
            }
            buf.Clear();
            Wire.AppendProbe(buf, Wire.TProbe, new Probe { Kind = kind, Player = p.Id, Seq = seq, SentMonoNs = now }, size);
            TrySend(p, buf, channel);
        }

        /// <summary>Sends the player's next pingpong probe, if it has any left and the run goes on.</summary>
        internal void SendPingpong(ClientPlayer p)
        {
            if (phase != Phase.Running || p.PingpongLeft <= 0)
            {
                return;
            }
            p.PingpongLeft--;
            SendProbe(p, Wire.ProbeNet, p.PingpongChannel, p.PingpongSize, -1, true);
        }

        internal void SampleLibraryRtt(ClientPlayer p)
        {
            double us = transport.LibraryRttUs((int)p.Id);
            if (double.IsNaN(us) || us < 0)
            {
                return;
            }
            rtt.Write(Clock.WallNs(), (int)p.Id, p.LibSeq++, us, "lib", null);
        }

        internal void SendInput(ClientPlayer p)
        {
            buf.Clear();
            Wire.AppendInput(buf, new Input { Player = p.Id, Seq = p.InputSeq++, Pos = p.Pos, Yaw = p.Yaw });
            TrySend(p, buf, Channel.Unreliable);
        }

        internal void SendBlockAction(ClientPlayer p, byte op, BlockPos pos)
        {
            uint id = p.NextAction++;
            p.Actions[id] = MonoClock();
            string name = op == Wire.OpRemove ? "block_remove" : "block_place";
            byte kind = op == Wire.OpRemove ? (byte)0 : (byte)(1 + p.Id % 8);
            events.Write((int)p.Id, name, id.ToString(CultureInfo.InvariantCulture),
                string.Format(CultureInfo.InvariantCulture, "x={0} y={1} z={2}", pos.X, pos.Y, pos.Z));
            buf.Clear();
            Wire.AppendBlockAction(buf, new BlockAction { Action = id, Op = op, Pos = pos, Kind = kind });
            TrySend(p, buf, Channel.Reliable);
        }

        // ---- the end ----

        private void BeginDrain(long now)
        {
            phase = Phase.Draining;
            schedule.Clear();
            drainEndMonoNs = now + DrainNs;
            nextDrainCheckNs = now;
        }

        private long Inflight(long now)
        {
            long total = 0;
            foreach (ClientPlayer p in players)
            {
                for (int k = 0; k < 2; k++)
                {
                    long echoed, lost, inflight;
                    p.Books[k].Totals(now, out echoed, out lost, out inflight);
                    total += inflight;
                }
            }
            return total;
        }

        private void Finish(int exitCode, string reason, bool probeEvents)
        {
            Phase was = phase;
            phase = Phase.Done;
            schedule.Clear();
            if (probeEvents && was != Phase.Connecting)
            {
                long now = MonoClock();
                foreach (ClientPlayer p in players)
                {
                    for (int k = 0; k < 2; k++)
                    {
                        ProbeBook b = p.Books[k];
                        if (b.Sent == 0)
                        {
                            continue;
                        }
                        long echoed, lost, inflight;
                        b.Totals(now, out echoed, out lost, out inflight);
                        events.Write((int)p.Id, "probes", b.Sent.ToString(CultureInfo.InvariantCulture),
                            string.Format(CultureInfo.InvariantCulture, "kind={0} echoed={1} lost={2} inflight={3}",
                                KindNames[k], echoed, lost, inflight));
                    }
                }
            }
            malformed.Flush(events);
            foreach (ClientPlayer p in players)
            {
                if ((p.Connecting || p.TransportUp || p.Connected) && !p.Gone)
                {
                    p.Gone = true;
                    try
                    {
                        transport.Disconnect((int)p.Id);
                    }
                    catch (Exception e)
                    {
                        if (!(e is System.IO.IOException || e is System.Net.Sockets.SocketException || e is ObjectDisposedException))
                        {
                            throw;
                        }
                    }
                }
            }
            events.Flush();
            rtt.Flush();
            ExitCode = exitCode;
            ExitReason = reason;
            Finished = true;
        }
    }
}
