using System;
using System.Collections.Generic;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using FishNet.Connection;
using FishNet.Transporting;
using Netstick.Core;
using Channel = Netstick.Core.Channel;
using FishChannel = FishNet.Transporting.Channel;

namespace Netstick.Unity.FishNetLib
{
    /// <summary>
    /// Netstick.Core's server transport over FishNet's ServerManager: a peer is a FishNet
    /// ClientId, Wire bytes travel as <see cref="NetstickBroadcast"/> on FishNet's reliable or
    /// unreliable channel. Tugboat binds -host (0.0.0.0: every interface).
    /// </summary>
    public sealed class FishNetServer : IServerTransport
    {
        private readonly Options options;
        private readonly RateSettings rates;
        private readonly EventQueue events = new EventQueue();
        private FishNetNode node;

        public FishNetServer(Options options, RateSettings rates)
        {
            this.options = options;
            this.rates = rates;
            LibraryVersions = BuildInfo.LibraryVersions();
            EffectiveChannels = FishNetNode.Channels();
            Limits = FishNetNode.Limits;
        }

        public string Name { get { return options.Transport; } }

        public IDictionary<string, string> LibraryVersions { get; private set; }

        public IDictionary<string, string> EffectiveChannels { get; private set; }

        public MessageLimits Limits { get; private set; }

        public void Start(string host, int port)
        {
            // Tugboat reports a failed bind later, as a state change; try the port first.
            ProbeUdpPort(host, port);
            node = new FishNetNode(options, rates);
            node.Tugboat.SetServerBindAddress(host, IPAddressType.IPv4);
            node.Tugboat.SetPort(checked((ushort)port));
            node.Manager.ServerManager.OnRemoteConnectionState += OnRemoteState;
            node.Manager.ServerManager.RegisterBroadcast<NetstickBroadcast>(OnBroadcast, false);
            if (!node.Manager.ServerManager.StartConnection())
            {
                throw new BindException("-host " + host + " -port " + port.ToString(CultureInfo.InvariantCulture) + ": FishNet's server did not start");
            }
        }

        public void Poll(IServerHandler handler)
        {
            events.DrainServer(handler);
        }

        public void Send(int peer, byte[] message, int length, Channel channel)
        {
            NetworkConnection conn;
            if (!node.Manager.ServerManager.Clients.TryGetValue(peer, out conn))
            {
                return;
            }
            var msg = new NetstickBroadcast { Payload = new WirePayload { Bytes = new ArraySegment<byte>(message, 0, length) } };
            node.Manager.ServerManager.Broadcast(conn, msg, false, channel == Channel.Reliable ? FishChannel.Reliable : FishChannel.Unreliable);
        }

        public void Disconnect(int peer)
        {
            NetworkConnection conn;
            if (node.Manager.ServerManager.Clients.TryGetValue(peer, out conn))
            {
                conn.Disconnect(true);
            }
        }

        public void Stop()
        {
            if (node != null)
            {
                // Tells every client before the socket closes.
                node.Manager.ServerManager.StopConnection(true);
            }
        }

        private void OnRemoteState(NetworkConnection conn, RemoteConnectionStateArgs args)
        {
            if (args.ConnectionState == RemoteConnectionState.Started)
            {
                events.Join(conn.ClientId, conn.GetAddress());
            }
            else if (args.ConnectionState == RemoteConnectionState.Stopped)
            {
                events.Leave(conn.ClientId, "disconnected");
            }
        }

        private void OnBroadcast(NetworkConnection conn, NetstickBroadcast msg, FishChannel channel)
        {
            events.Message(conn.ClientId, msg.Payload.Bytes, channel == FishChannel.Reliable ? Channel.Reliable : Channel.Unreliable);
        }

        private static void ProbeUdpPort(string host, int port)
        {
            IPAddress address;
            if (!IPAddress.TryParse(host, out address))
            {
                throw new UsageException("-host " + host + ": expected an IPv4 address to bind (0.0.0.0 for every interface)");
            }
            try
            {
                using (var probe = new UdpClient(new IPEndPoint(address, port)))
                {
                }
            }
            catch (SocketException e)
            {
                throw new BindException("-host " + host + " -port " + port.ToString(CultureInfo.InvariantCulture) + ": " + e.Message, e);
            }
        }
    }
}
