using System.Collections.Generic;
using Netstick.Core;
using Unity.Entities;
using Unity.NetCode;
using Unity.Networking.Transport;
using Channel = Netstick.Core.Channel;
// Netstick.Core has a World too (the voxel world).
using World = Unity.Entities.World;

namespace Netstick.Unity.Nfe
{
    /// <summary>
    /// Netstick.Core's client transport: one NFE client world per player, each with its own
    /// driver and socket. A player is connected once its connection has a NetworkId; it is then
    /// put in game so that NFE's RTT estimate (NetworkSnapshotAck.EstimatedRTT) is kept. A
    /// connection that NFE drops before it got its NetworkId is retried until the core's
    /// -connect-timeout-s ends the attempt.
    /// </summary>
    public sealed class NfeClient : IClientTransport
    {
        private const long RetryDelayNs = 200L * 1000 * 1000;

        private sealed class PlayerWorld
        {
            public World World;
            public Entity Connection;
            public EntityQuery Received;
            public EntityArchetype SendArchetype;
            public NfeReassembly Reassembly = new NfeReassembly();
            public NetworkEndpoint Server;
            public bool Connected;
            public bool Wanted;
            public uint Seq;
            public long RetryAtMonoNs = long.MaxValue;
        }

        private readonly Options options;
        private readonly EventQueue events = new EventQueue();
        private readonly Dictionary<int, PlayerWorld> players = new Dictionary<int, PlayerWorld>();

        public NfeClient(Options options)
        {
            this.options = options;
            LibraryVersions = BuildInfo.LibraryVersions();
            EffectiveChannels = NfeWorlds.Channels();
            // Every message travels as RPC pieces of 1,000 bytes (NfeRpc): any size the contract allows.
            Limits = MessageLimits.Contract;
        }

        public string Name { get { return options.Transport; } }

        public IDictionary<string, string> LibraryVersions { get; private set; }

        public IDictionary<string, string> EffectiveChannels { get; private set; }

        public MessageLimits Limits { get; private set; }

        public void Connect(int player, string host, int port)
        {
            NetworkEndpoint server;
            if (!NetworkEndpoint.TryParse(host, checked((ushort)port), out server))
            {
                throw new UsageException("-host " + host + ": expected the server's IPv4 address");
            }
            var p = new PlayerWorld { World = NfeWorlds.CreateClient(player), Server = server, Wanted = true };
            p.Received = NfeWorlds.ReceivedQuery(p.World.EntityManager);
            p.SendArchetype = NfeWorlds.SendArchetype(p.World.EntityManager);
            players[player] = p;
            Attempt(p);
        }

        public void Poll(IClientHandler handler)
        {
            foreach (KeyValuePair<int, PlayerWorld> kv in players)
            {
                Poll(kv.Key, kv.Value);
            }
            events.DrainClient(handler);
        }

        public void Send(int player, byte[] message, int length, Channel channel)
        {
            PlayerWorld p;
            if (players.TryGetValue(player, out p) && p.Connected)
            {
                NfeWorlds.Send(p.World.EntityManager, p.SendArchetype, p.Connection, ref p.Seq, message, length, channel);
            }
        }

        public void Disconnect(int player)
        {
            PlayerWorld p;
            if (!players.TryGetValue(player, out p))
            {
                return;
            }
            p.Wanted = false;
            EntityManager em = p.World.EntityManager;
            if (p.Connection != Entity.Null && em.Exists(p.Connection))
            {
                em.AddComponentData(p.Connection, new NetworkStreamRequestDisconnect { Reason = NetworkStreamDisconnectReason.ConnectionClose });
            }
        }

        public double LibraryRttUs(int player)
        {
            // NetworkSnapshotAck.EstimatedRTT: NFE's smoothed RTT in ms from its snapshot and
            // command traffic (paced by the ticks), 0 until measured.
            PlayerWorld p;
            if (!players.TryGetValue(player, out p) || !p.Connected || !p.World.EntityManager.Exists(p.Connection))
            {
                return double.NaN;
            }
            float rttMs = p.World.EntityManager.GetComponentData<NetworkSnapshotAck>(p.Connection).EstimatedRTT;
            return rttMs > 0 ? rttMs * 1000.0 : double.NaN;
        }

        private void Attempt(PlayerWorld p)
        {
            p.RetryAtMonoNs = long.MaxValue;
            p.Seq = 0;
            p.Connection = NfeWorlds.Connect(p.World, p.Server);
        }

        private void Poll(int player, PlayerWorld p)
        {
            EntityManager em = p.World.EntityManager;
            bool exists = p.Connection != Entity.Null && em.Exists(p.Connection);
            if (!p.Connected && exists && em.HasComponent<NetworkId>(p.Connection))
            {
                p.Connected = true;
                if (!em.HasComponent<NetworkStreamInGame>(p.Connection))
                {
                    em.AddComponent<NetworkStreamInGame>(p.Connection);
                }
                events.Join(player, "");
            }
            else if (!exists)
            {
                if (p.Connected)
                {
                    p.Connected = false;
                    p.Wanted = false;
                    p.Reassembly.Forget(p.Connection);
                    events.Leave(player, "disconnected by server or transport");
                }
                else if (p.Wanted && p.RetryAtMonoNs == long.MaxValue)
                {
                    p.RetryAtMonoNs = Clock.MonoNs() + RetryDelayNs;
                }
                else if (p.Wanted && Clock.MonoNs() >= p.RetryAtMonoNs)
                {
                    Attempt(p);
                }
            }
            p.Reassembly.Drain(em, p.Received, (source, data, length, channel) => events.Message(player, data, 0, length, channel));
        }
    }
}
