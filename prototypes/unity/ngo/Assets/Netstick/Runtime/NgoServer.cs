using System.Collections.Generic;
using System.Globalization;
using Netstick.Core;
using Unity.Netcode;

namespace Netstick.Unity.Ngo
{
    /// <summary>
    /// Netstick.Core's server transport over one NetworkManager started as a server. A peer is an
    /// NGO client id (it fits an int: NGO counts them up from 1). The listen address is -host
    /// (SetConnectionData's listenAddress): 0.0.0.0 accepts every interface, whereas UnityTransport
    /// left alone listens on loopback only.
    /// </summary>
    public sealed class NgoServer : IServerTransport
    {
        private readonly Options options;
        private readonly RateSettings rates;
        private readonly EventQueue events = new EventQueue();
        private NgoNode node;

        public NgoServer(Options options, RateSettings rates)
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

        public void Start(string host, int port)
        {
            node = new NgoNode("NGO server", options, rates);
            NgoVersionSpecific.SetConnectionData(node.Transport, host, checked((ushort)port), host);
            node.Manager.OnClientConnectedCallback += id => events.Join((int)id, NgoVersionSpecific.Address(node, id));
            node.Manager.OnClientDisconnectCallback += id => events.Leave((int)id, "disconnected");
            if (!node.Manager.StartServer())
            {
                throw new BindException("-host " + host + " -port " + port.ToString(CultureInfo.InvariantCulture)
                    + ": NetworkManager.StartServer failed (address in use or not local)");
            }
            node.Register((sender, data, length, channel) => events.Message((int)sender, data, 0, length, channel));
        }

        public void Poll(IServerHandler handler)
        {
            events.DrainServer(handler);
        }

        public void Send(int peer, byte[] message, int length, Channel channel)
        {
            node.Send((ulong)peer, message, length, channel);
        }

        public void Disconnect(int peer)
        {
            node.Manager.DisconnectClient((ulong)peer);
        }

        public void Stop()
        {
            if (node != null)
            {
                // Shutdown disconnects every client before the driver closes.
                node.Destroy();
            }
        }
    }
}
