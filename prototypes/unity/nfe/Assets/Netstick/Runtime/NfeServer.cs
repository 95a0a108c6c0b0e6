using System.Collections.Generic;
using System.Globalization;
using Netstick.Core;
using Unity.Collections;
using Unity.Entities;
using Unity.NetCode;
using Unity.Networking.Transport;
using Channel = Netstick.Core.Channel;
// Netstick.Core has a World too (the voxel world).
using World = Unity.Entities.World;

namespace Netstick.Unity.Nfe
{
    /// <summary>
    /// Netstick.Core's server transport over an NFE server world: it listens on -host through
    /// the world's NetworkStreamDriver, a peer is a connection's NetworkId, and Wire messages are
    /// NetstickRpc pieces. Every connection is put in game (NetworkStreamInGame) so that NFE
    /// exchanges snapshots and commands and keeps its RTT estimate.
    /// </summary>
    public sealed class NfeServer : IServerTransport
    {
        private readonly Options options;
        private readonly RateSettings rates;
        private readonly EventQueue events = new EventQueue();
        private readonly NfeReassembly reassembly = new NfeReassembly();
        private readonly Dictionary<int, Entity> connections = new Dictionary<int, Entity>();
        private readonly Dictionary<int, uint> sequences = new Dictionary<int, uint>();
        private readonly HashSet<int> seen = new HashSet<int>();
        private readonly List<int> gone = new List<int>();
        private World world;
        private EntityQuery connected;
        private EntityQuery received;
        private EntityArchetype sendArchetype;

        public NfeServer(Options options, RateSettings rates)
        {
            this.options = options;
            this.rates = rates;
            LibraryVersions = BuildInfo.LibraryVersions();
            EffectiveChannels = NfeWorlds.Channels();
            // Every message travels as RPC pieces of 1,000 bytes (NfeRpc): any size the contract allows.
            Limits = MessageLimits.Contract;
        }

        public string Name { get { return options.Transport; } }

        public IDictionary<string, string> LibraryVersions { get; private set; }

        public IDictionary<string, string> EffectiveChannels { get; private set; }

        public MessageLimits Limits { get; private set; }

        public void Start(string host, int port)
        {
            if (options.TransportOptions.Count > 0)
            {
                foreach (string key in options.TransportOptions.Keys)
                {
                    throw new UsageException("-param t." + key + ": transport utp of NFE has no options");
                }
            }
            world = NfeWorlds.CreateServer(rates);
            EntityManager em = world.EntityManager;
            connected = em.CreateEntityQuery(ComponentType.ReadOnly<NetworkId>(), ComponentType.ReadOnly<NetworkStreamConnection>());
            received = NfeWorlds.ReceivedQuery(em);
            sendArchetype = NfeWorlds.SendArchetype(em);
            NetworkEndpoint endpoint;
            if (!NetworkEndpoint.TryParse(host, checked((ushort)port), out endpoint))
            {
                throw new UsageException("-host " + host + ": expected an IPv4 address to listen on (0.0.0.0 for every interface)");
            }
            if (!NfeWorlds.Listen(world, endpoint))
            {
                throw new BindException("-host " + host + " -port " + port.ToString(CultureInfo.InvariantCulture) + ": NetworkStreamDriver.Listen failed");
            }
        }

        public void Poll(IServerHandler handler)
        {
            EntityManager em = world.EntityManager;
            TrackConnections(em);
            reassembly.Drain(em, received, Deliver);
            events.DrainServer(handler);
        }

        public void Send(int peer, byte[] message, int length, Channel channel)
        {
            Entity connection;
            if (!connections.TryGetValue(peer, out connection))
            {
                return;
            }
            uint seq;
            sequences.TryGetValue(peer, out seq);
            NfeWorlds.Send(world.EntityManager, sendArchetype, connection, ref seq, message, length, channel);
            sequences[peer] = seq;
        }

        public void Disconnect(int peer)
        {
            Entity connection;
            if (connections.TryGetValue(peer, out connection) && world.EntityManager.Exists(connection))
            {
                world.EntityManager.AddComponentData(connection, new NetworkStreamRequestDisconnect { Reason = NetworkStreamDisconnectReason.ConnectionClose });
            }
        }

        public void Stop()
        {
            if (world == null || !world.IsCreated)
            {
                return;
            }
            // Asks NFE to close every connection; the server world's next update sends it.
            foreach (int peer in new List<int>(connections.Keys))
            {
                Disconnect(peer);
            }
        }

        private void TrackConnections(EntityManager em)
        {
            seen.Clear();
            using (NativeArray<Entity> entities = connected.ToEntityArray(Allocator.Temp))
            using (NativeArray<NetworkId> ids = connected.ToComponentDataArray<NetworkId>(Allocator.Temp))
            {
                for (int i = 0; i < entities.Length; i++)
                {
                    int id = ids[i].Value;
                    seen.Add(id);
                    if (connections.ContainsKey(id))
                    {
                        continue;
                    }
                    Entity entity = entities[i];
                    connections[id] = entity;
                    sequences[id] = 0;
                    if (!em.HasComponent<NetworkStreamInGame>(entity))
                    {
                        em.AddComponent<NetworkStreamInGame>(entity);
                    }
                    var stream = em.GetComponentData<NetworkStreamConnection>(entity);
                    string remote = NfeWorlds.RemoteAddress(world, stream);
                    events.Join(id, remote);
                }
            }
            gone.Clear();
            foreach (int id in connections.Keys)
            {
                if (!seen.Contains(id))
                {
                    gone.Add(id);
                }
            }
            foreach (int id in gone)
            {
                reassembly.Forget(connections[id]);
                connections.Remove(id);
                sequences.Remove(id);
                events.Leave(id, "disconnected");
            }
        }

        private void Deliver(Entity source, byte[] data, int length, Channel channel)
        {
            if (!world.EntityManager.Exists(source) || !world.EntityManager.HasComponent<NetworkId>(source))
            {
                return;
            }
            int id = world.EntityManager.GetComponentData<NetworkId>(source).Value;
            events.Message(id, data, 0, length, channel);
        }
    }
}
