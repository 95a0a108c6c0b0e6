using System.Collections.Generic;
using Netstick.Core;
using Unity.Netcode;

namespace Netstick.Unity.Ngo
{
    /// <summary>
    /// Netstick.Core's client transport: one NetworkManager and UnityTransport per player, each
    /// with its own UDP socket, so the server sees one peer per player (NGO runs several
    /// NetworkManagers in one process, as its own integration tests do).
    /// </summary>
    public sealed class NgoClient : IClientTransport
    {
        private readonly Options options;
        private readonly RateSettings rates;
        private readonly EventQueue events = new EventQueue();
        private readonly Dictionary<int, NgoNode> nodes = new Dictionary<int, NgoNode>();
        private readonly HashSet<int> connected = new HashSet<int>();

        public NgoClient(Options options, RateSettings rates)
        {
            this.options = options;
            this.rates = rates;
            LibraryVersions = BuildInfo.LibraryVersions();
            EffectiveChannels = NgoNode.Channels();
            Limits = NgoNode.Limits(options);
        }

        public string Name { get { return options.Transport; } }

        public IDictionary<string, string> LibraryVersions { get; private set; }

        public IDictionary<string, string> EffectiveChannels { get; private set; }

        public MessageLimits Limits { get; private set; }

        public void Connect(int player, string host, int port)
        {
            var node = new NgoNode("NGO player " + player, options, rates);
            nodes[player] = node;
            NgoVersionSpecific.SetConnectionData(node.Transport, host, checked((ushort)port), null);
            node.Manager.OnClientConnectedCallback += id =>
            {
                if (id == node.Manager.LocalClientId && connected.Add(player))
                {
                    events.Join(player, "");
                }
            };
            node.Manager.OnClientDisconnectCallback += id =>
            {
                if (id == node.Manager.LocalClientId || id == NetworkManager.ServerClientId)
                {
                    bool was = connected.Remove(player);
                    events.Leave(player, was ? "disconnected: " + node.Manager.DisconnectReason : "connect failed");
                }
            };
            if (!node.Manager.StartClient())
            {
                events.Leave(player, "NetworkManager.StartClient failed");
                return;
            }
            node.Register((sender, data, length, channel) => events.Message(player, data, 0, length, channel));
        }

        public void Poll(IClientHandler handler)
        {
            events.DrainClient(handler);
        }

        public void Send(int player, byte[] message, int length, Channel channel)
        {
            NgoNode node;
            if (connected.Contains(player) && nodes.TryGetValue(player, out node))
            {
                node.Send(NetworkManager.ServerClientId, message, length, channel);
            }
        }

        public void Disconnect(int player)
        {
            NgoNode node;
            if (nodes.TryGetValue(player, out node))
            {
                nodes.Remove(player);
                connected.Remove(player);
                node.Destroy();
            }
        }

        public double LibraryRttUs(int player)
        {
            // UnityTransport.GetCurrentRtt: the reliable pipeline's last RTT in whole ms, 0 until
            // reliable traffic measured one.
            NgoNode node;
            if (!connected.Contains(player) || !nodes.TryGetValue(player, out node))
            {
                return double.NaN;
            }
            ulong rttMs = node.Transport.GetCurrentRtt(NetworkManager.ServerClientId);
            return rttMs > 0 ? rttMs * 1000.0 : double.NaN;
        }
    }
}
