using System;
using System.Collections.Generic;
using System.Globalization;

namespace Netstick.Core
{
    /// <summary>
    /// The authoritative game server of CONTRACT.md §4, ported from the Go reference
    /// (internal/server): answers hellos with a welcome and the world snapshot, echoes <c>net</c> probes
    /// in its receive path and <c>app</c> probes in the next tick, applies and acknowledges block
    /// actions, sends moved transforms, block changes and keep-alives every tick, and runs the
    /// server-side workloads (world, envmod). It owns no thread: the host calls <see cref="Step"/>.
    /// </summary>
    public sealed class ServerCore : IServerHandler
    {
        /// <summary>A player that got nothing for this long gets a keep-alive (CONTRACT.md §4).</summary>
        public const long KeepaliveNs = 500000000L;

        /// <summary>Largest State message: one datagram's worth of transforms, or less where the transport's unreliable limit is lower.</summary>
        public const int MaxStateBytes = 1200;

        /// <summary>Largest BlockChanges message (reliable channel).</summary>
        public const int MaxChangesBytes = 16 << 10;

        private struct PendingAction
        {
            public ServerSession Session;
            public BlockAction Action;
        }

        private struct PendingEcho
        {
            public ServerSession Session;
            public Channel Channel;
            public byte[] Message;
        }

        private readonly Options options;
        private readonly Workload workload;
        private readonly IServerTransport transport;
        private readonly EventLog events;
        private readonly TickLog ticks;
        private readonly World world;
        private readonly long periodNs;
        private readonly int malformedEveryTicks;
        private readonly MessageLimits limits;
        private readonly int stateBytes;
        private readonly int changesPerMessage;

        private readonly Dictionary<int, ServerSession> sessions = new Dictionary<int, ServerSession>();
        private readonly SortedDictionary<uint, ServerSession> joined = new SortedDictionary<uint, ServerSession>();
        private readonly Dictionary<uint, Transform> moved = new Dictionary<uint, Transform>();
        private readonly List<PendingAction> actions = new List<PendingAction>();
        private List<PendingEcho> appEchoes = new List<PendingEcho>();
        private List<PendingEcho> spareEchoes = new List<PendingEcho>();
        private List<byte[]> snapshot; // cached; null once the world changed

        // Reused from tick to tick.
        private readonly List<PendingAction> tickActions = new List<PendingAction>();
        private readonly List<bool> tickOks = new List<bool>();
        private readonly List<BlockChange> changes = new List<BlockChange>();
        private readonly List<Transform> tickMoved = new List<Transform>();
        private readonly List<ServerSession> recipients = new List<ServerSession>();
        private readonly WireBuffer buf = new WireBuffer(2048);
        private readonly WireBuffer echoBuf = new WireBuffer(256);

        private bool envStarted;
        private long envNextNs;
        private double envIntervalS;
        private int envStep;

        private long msgsIn, bytesIn, msgsOut, bytesOut;
        private readonly MalformedCounter malformed = new MalformedCounter();

        private bool started;
        private bool stopped;
        private long startMonoNs;
        private long nextTickNs;
        private uint tick;

        /// <summary>
        /// The monotonic clock (ns) of every deadline and RTT: <see cref="Clock.MonoNs"/>, replaced by tests that
        /// need to move time on (a 5 s probe timeout, a connect timeout) without waiting for it.
        /// </summary>
        public Func<long> MonoClock { get; set; } = Clock.MonoNs;

        /// <summary>
        /// Builds the server and, for the world workload, its world: before <see cref="Start"/> and so
        /// before READY, so that building never counts as measured time.
        /// </summary>
        public ServerCore(Options options, IServerTransport transport, EventLog events, TickLog ticks)
        {
            if (options == null || transport == null || events == null || ticks == null)
            {
                throw new ArgumentNullException(options == null ? "options" : transport == null ? "transport" : events == null ? "events" : "ticks");
            }
            this.options = options;
            workload = options.ResolvedWorkload ?? Workloads.Resolve(options.Workload ?? "idle", options.Params);
            this.transport = transport;
            this.events = events;
            this.ticks = ticks;
            limits = transport.Limits ?? MessageLimits.Contract;
            // The echo of a stream or pingpong probe is as large as the probe.
            limits.CheckProbe(workload, transport.Name);
            stateBytes = Math.Min(MaxStateBytes, limits.UnreliableBytes);
            changesPerMessage = (Math.Min(MaxChangesBytes, limits.ReliableBytes) - Wire.BlockChangesHeaderBytes) / Wire.BlockChangeBytes;
            if (workload.Name == "world" && limits.ReliableBytes < World.MaxChunkMessageBytes)
            {
                throw new UsageException("-workload world: a world chunk takes up to "
                    + World.MaxChunkMessageBytes.ToString(CultureInfo.InvariantCulture) + " bytes, but transport "
                    + transport.Name + " carries at most " + limits.ReliableBytes.ToString(CultureInfo.InvariantCulture)
                    + " bytes on its reliable channel (" + limits.Source + ")");
            }
            world = workload.Name == "world" ? World.Generate(workload.Objects, options.Seed) : new World();
            periodNs = (long)(1e9 / options.TickRateHz);
            malformedEveryTicks = Math.Max(1, (int)Math.Round(options.TickRateHz));
        }

        /// <summary>The world (tests, and the host's diagnostics).</summary>
        public World World
        {
            get { return world; }
        }

        /// <summary>Players that said hello and are still connected.</summary>
        public int PlayersConnected
        {
            get { return joined.Count; }
        }

        /// <summary>Ticks run so far.</summary>
        public uint Ticks
        {
            get { return tick; }
        }

        /// <summary>Whether -duration elapsed (never with -duration 0); the host then stops.</summary>
        public bool Finished { get; private set; }

        /// <summary>The address the transport listens on, host:port, for the READY line.</summary>
        public string Addr
        {
            get { return options.Addr; }
        }

        /// <summary>Listens (throws <see cref="BindException"/>, exit 3) and logs <c>listen</c>; then print READY.</summary>
        public void Start()
        {
            if (started)
            {
                throw new InvalidOperationException("ServerCore.Start called twice");
            }
            transport.Start(options.Host, options.Port);
            started = true;
            events.Write(null, "listen", "", "addr=" + LineLog.Sanitize(options.Addr));
            startMonoNs = MonoClock();
            nextTickNs = startMonoNs + periodNs;
        }

        /// <summary>
        /// Delivers what arrived (net echoes go out here), runs the tick if it is due, flushes the logs when
        /// due, and returns how many ns until the next tick is due (0: call again at once).
        /// nowMonoNs is the host's reading of <see cref="Clock.MonoNs"/>; the core reads
        /// <see cref="MonoClock"/> again wherever a time is logged, so a slow host never skews it.
        /// </summary>
        public long Step(long nowMonoNs)
        {
            if (!started || stopped)
            {
                return periodNs;
            }
            transport.Poll(this);
            long now = MonoClock();
            if (options.DurationS > 0 && now - startMonoNs >= (long)(options.DurationS * 1e9))
            {
                Finished = true;
            }
            if (now >= nextTickNs)
            {
                RunTick(now);
                now = MonoClock();
            }
            events.FlushIfDue();
            ticks.FlushIfDue();
            return Math.Max(0, nextTickNs - now);
        }

        /// <summary>Closes every connection (clients notice at once) and logs pending malformed counts.</summary>
        public void Stop(string reason)
        {
            if (stopped)
            {
                return;
            }
            stopped = true;
            malformed.Flush(events);
            if (started)
            {
                transport.Stop();
            }
        }

        // ---- IServerHandler: called during transport.Poll on the host's thread ----

        public void OnJoin(int peer, string remote)
        {
            sessions[peer] = new ServerSession(peer, remote ?? "");
        }

        public void OnLeave(int peer, string reason)
        {
            ServerSession s;
            if (!sessions.TryGetValue(peer, out s))
            {
                return;
            }
            sessions.Remove(peer);
            if (!s.Joined)
            {
                return;
            }
            ServerSession current;
            if (joined.TryGetValue(s.Player, out current) && current == s)
            {
                joined.Remove(s.Player);
                moved.Remove(s.Player);
            }
            events.Write((int)s.Player, "disconnect", "", "reason=" + LineLog.Sanitize(string.IsNullOrEmpty(reason) ? "closed" : reason));
        }

        public void OnMessage(int peer, byte[] message, int length, Channel channel)
        {
            msgsIn++;
            bytesIn += length;
            if (length <= 0)
            {
                malformed.Drop("empty message");
                return;
            }
            ServerSession s;
            if (!sessions.TryGetValue(peer, out s))
            {
                return; // raced with a disconnect
            }
            try
            {
                switch (message[0])
                {
                    case Wire.TProbe:
                        OnProbe(s, message, length, channel);
                        break;
                    case Wire.THello:
                        Hello h = Wire.DecodeHello(message, length);
                        if (h.Schema != Wire.SchemaVersion)
                        {
                            malformed.Drop("hello: schema " + h.Schema + ", expected " + Wire.SchemaVersion);
                            return;
                        }
                        Join(s, h.Player);
                        break;
                    case Wire.TInput:
                        Input input = Wire.DecodeInput(message, length);
                        if (s.Joined)
                        {
                            moved[s.Player] = new Transform { Player = s.Player, Pos = input.Pos, Yaw = input.Yaw };
                        }
                        break;
                    case Wire.TBlockAction:
                        BlockAction a = Wire.DecodeBlockAction(message, length);
                        actions.Add(new PendingAction { Session = s, Action = a });
                        break;
                    default:
                        malformed.Drop("unexpected message type " + message[0] + " from a client");
                        break;
                }
            }
            catch (WireException e)
            {
                malformed.Drop(e.Message);
            }
        }

        private void OnProbe(ServerSession s, byte[] message, int length, Channel channel)
        {
            Probe p = Wire.DecodeProbe(message, length);
            if (p.Kind == Wire.ProbeNet)
            {
                // The net echo goes out in the receive path, now: network plus transport latency.
                echoBuf.Clear();
                EnsureCapacityCopy(echoBuf, message, length);
                echoBuf.Data[0] = Wire.TProbeEcho;
                Send(s, channel, echoBuf.Data, echoBuf.Length);
                return;
            }
            var echo = new byte[length];
            Buffer.BlockCopy(message, 0, echo, 0, length);
            echo[0] = Wire.TProbeEcho;
            appEchoes.Add(new PendingEcho { Session = s, Channel = channel, Message = echo });
        }

        private static void EnsureCapacityCopy(WireBuffer dst, byte[] src, int length)
        {
            dst.PadTo(0, length);
            Buffer.BlockCopy(src, 0, dst.Data, 0, length);
        }

        /// <summary>Player k spawns 2 m apart from its neighbours (CONTRACT.md §4).</summary>
        public static Vec3 SpawnPoint(uint player)
        {
            const int perRow = 32;
            return new Vec3((int)(player % perRow) * 2 - perRow, 0, (int)(player / perRow) * 2 - perRow);
        }

        private void Join(ServerSession s, uint player)
        {
            if (s.Joined && s.Player != player)
            {
                malformed.Drop("hello for player " + player + " on the connection of player " + s.Player);
                return;
            }
            if (s.Joined)
            {
                // A repeated hello: the welcome was lost on a transport without reliability. Answer again
                // with the current world.
                Welcome(s, player);
                return;
            }
            if (joined.ContainsKey(player))
            {
                events.Write((int)player, "error", "", "error=player_id_already_connected");
                transport.Disconnect(s.Peer);
                return;
            }
            s.Joined = true;
            s.Player = player;
            joined[player] = s;
            if (workload.Name == "envmod" && !envStarted)
            {
                envStarted = true;
                envIntervalS = workload.IntervalS;
                envNextNs = MonoClock() + (long)(envIntervalS * 1e9);
            }
            events.Write((int)player, "join", "", "remote=" + LineLog.Sanitize(s.Remote));
            Welcome(s, player);
        }

        private void Welcome(ServerSession s, uint player)
        {
            if (snapshot == null)
            {
                snapshot = world.Snapshot();
            }
            buf.Clear();
            Wire.AppendWelcome(buf, new Welcome
            {
                Player = player,
                Spawn = SpawnPoint(player),
                TickRateHz = (ushort)Math.Round(options.TickRateHz),
                WorldBlocks = (uint)world.Blocks,
                WorldChunks = (uint)snapshot.Count,
            });
            Send(s, Channel.Reliable, buf.Data, buf.Length);
            foreach (byte[] chunk in snapshot)
            {
                Send(s, Channel.Reliable, chunk, chunk.Length);
            }
        }

        private void Send(ServerSession s, Channel channel, byte[] message, int length)
        {
            string tooLarge = limits.Problem(channel, length, transport.Name);
            if (tooLarge != null)
            {
                throw new MessageTooLargeException("server: message type " + message[0].ToString(CultureInfo.InvariantCulture)
                    + " of " + tooLarge);
            }
            try
            {
                transport.Send(s.Peer, message, length, channel);
            }
            catch (Exception e)
            {
                if (e is ArgumentException || e is InvalidOperationException || e is System.IO.IOException
                    || e is System.Net.Sockets.SocketException || e is ObjectDisposedException)
                {
                    return; // the peer is going away; its OnLeave follows
                }
                throw;
            }
            msgsOut++;
            bytesOut += length;
            s.LastSentMonoNs = MonoClock();
        }

        // ---- the tick ----

        private void RunTick(long startNs)
        {
            tick++;
            long lateNs = startNs - nextTickNs;
            int players, objects;
            DoTick(startNs, out players, out objects);
            long endNs = MonoClock();
            ticks.Write(Clock.WallNsAt(endNs), tick, lateNs / 1e3, (endNs - startNs) / 1e3, players, objects,
                msgsIn, msgsOut, bytesIn, bytesOut);
            msgsIn = msgsOut = bytesIn = bytesOut = 0;
            if (tick % (uint)malformedEveryTicks == 0)
            {
                malformed.Flush(events);
            }
            nextTickNs += periodNs;
            if (nextTickNs < endNs - periodNs)
            {
                nextTickNs = endNs; // overloaded: skip ticks rather than spiral
            }
        }

        private void DoTick(long nowNs, out int players, out int objects)
        {
            tickActions.Clear();
            tickActions.AddRange(actions);
            actions.Clear();
            changes.Clear();
            tickOks.Clear();
            foreach (PendingAction pa in tickActions)
            {
                BlockAction a = pa.Action;
                bool ok = false;
                if (a.Op == Wire.OpPlace)
                {
                    ok = world.Get(a.Pos.X, a.Pos.Y, a.Pos.Z) == 0 && world.Set(a.Pos.X, a.Pos.Y, a.Pos.Z, a.Kind);
                }
                else if (a.Op == Wire.OpRemove)
                {
                    ok = world.Set(a.Pos.X, a.Pos.Y, a.Pos.Z, 0);
                }
                if (ok)
                {
                    changes.Add(new BlockChange(a.Pos, world.Get(a.Pos.X, a.Pos.Y, a.Pos.Z)));
                }
                tickOks.Add(ok);
            }
            if (envStarted && nowNs >= envNextNs)
            {
                int step;
                double intervalS;
                int placed = EnvmodStep(out step, out intervalS);
                if (placed > 0)
                {
                    events.Write(null, "envmod_step", placed.ToString(CultureInfo.InvariantCulture),
                        "step=" + step.ToString(CultureInfo.InvariantCulture) + " interval_s="
                        + intervalS.ToString("F4", CultureInfo.InvariantCulture));
                }
            }
            if (changes.Count > 0)
            {
                snapshot = null;
            }
            tickMoved.Clear();
            tickMoved.AddRange(moved.Values);
            moved.Clear();
            List<PendingEcho> echoes = appEchoes;
            appEchoes = spareEchoes;
            spareEchoes = echoes;
            recipients.Clear();
            recipients.AddRange(joined.Values);
            players = joined.Count;
            objects = joined.Count + world.Blocks;

            for (int i = 0; i < tickActions.Count; i++)
            {
                buf.Clear();
                Wire.AppendBlockAck(buf, new BlockAck { Action = tickActions[i].Action.Action, Ok = tickOks[i] });
                Send(tickActions[i].Session, Channel.Reliable, buf.Data, buf.Length);
            }
            // app echoes in the tick's work, so that their round trip overlaps this tick's row.
            foreach (PendingEcho e in echoes)
            {
                if (sessions.ContainsKey(e.Session.Peer))
                {
                    Send(e.Session, e.Channel, e.Message, e.Message.Length);
                }
            }
            echoes.Clear();
            // Transforms: one State message per datagram-sized batch, the same bytes to everyone.
            for (int start = 0; start < tickMoved.Count;)
            {
                buf.Clear();
                int header = Wire.AppendStateHeader(buf, tick);
                int n = 0;
                while (start + n < tickMoved.Count && buf.Length + Wire.TransformBytes <= stateBytes)
                {
                    Wire.AppendTransform(buf, tickMoved[start + n]);
                    n++;
                }
                Wire.FinishState(buf, header, n);
                foreach (ServerSession r in recipients)
                {
                    Send(r, Channel.Unreliable, buf.Data, buf.Length);
                }
                start += n;
            }
            for (int start = 0; start < changes.Count; start += changesPerMessage)
            {
                int end = Math.Min(start + changesPerMessage, changes.Count);
                buf.Clear();
                Wire.AppendBlockChanges(buf, tick, changes.GetRange(start, end - start));
                foreach (ServerSession r in recipients)
                {
                    Send(r, Channel.Reliable, buf.Data, buf.Length);
                }
            }
            foreach (ServerSession r in recipients)
            {
                if (nowNs - r.LastSentMonoNs >= KeepaliveNs)
                {
                    buf.Clear();
                    Wire.AppendKeepalive(buf, tick);
                    Send(r, Channel.Unreliable, buf.Data, buf.Length);
                }
            }
        }

        /// <summary>
        /// Places one grid layer of blocks above the spawn area and shortens the interval (CONTRACT.md §5
        /// envmod): step k fills y = 8 + k of a square of side ⌈√blocks⌉ centred on the origin.
        /// </summary>
        private int EnvmodStep(out int step, out double intervalS)
        {
            int n = workload.Blocks;
            int side = (int)Math.Ceiling(Math.Sqrt(n));
            int y = 8 + envStep;
            byte kind = (byte)(1 + envStep % 8);
            int placed = 0;
            for (int i = 0; i < n; i++)
            {
                var p = new BlockPos(i % side - side / 2, y, i / side - side / 2);
                if (world.Set(p.X, p.Y, p.Z, kind))
                {
                    changes.Add(new BlockChange(p, kind));
                    placed++;
                }
            }
            step = envStep;
            intervalS = envIntervalS;
            envStep++;
            envIntervalS = Math.Max(envIntervalS - workload.IntervalChangeS, periodNs / 1e9);
            envNextNs += (long)(envIntervalS * 1e9);
            return placed;
        }
    }
}
