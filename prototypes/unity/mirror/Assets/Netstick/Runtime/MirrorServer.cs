using System;
using System.Collections.Generic;
using System.Globalization;
using System.Net.Sockets;
using Mirror;
using Netstick.Core;
using UnityEngine;

namespace Netstick.Unity.MirrorLib
{
    /// <summary>
    /// Netstick.Core's server transport over Mirror's NetworkServer, used directly (no
    /// NetworkManager: no player prefabs, scene management or headless auto-start). A peer is a
    /// Mirror connectionId; Wire bytes travel as <see cref="NetstickReliable"/> and
    /// <see cref="NetstickUnreliable"/> messages, batched and flushed by Mirror at its send rate.
    /// </summary>
    public sealed class MirrorServer : IServerTransport
    {
        private readonly GameObject owner;
        private readonly Options options;
        private readonly EventQueue events = new EventQueue();

        public MirrorServer(GameObject owner, Options options)
        {
            this.owner = owner;
            this.options = options;
            LibraryVersions = BuildInfo.LibraryVersions();
            EffectiveChannels = MirrorTransportFactory.EffectiveChannels(options.Transport);
            Limits = MirrorTransportFactory.Limits(options.Transport, options.TransportOptions);
        }

        public string Name { get { return options.Transport; } }

        public IDictionary<string, string> LibraryVersions { get; private set; }

        public IDictionary<string, string> EffectiveChannels { get; private set; }

        public MessageLimits Limits { get; private set; }

        public void Start(string host, int port)
        {
            // Both of Mirror's transports listen on every interface (dual-stack); -host is then
            // only what READY reports. The contract's runs bind 0.0.0.0 or loopback, both covered.
            if (options.Transport == MirrorTransportFactory.Telepathy)
            {
                MirrorTransportFactory.ProbeTcpPort(port);
            }
            MirrorTransportFactory.Create(owner, options.Transport, options.TransportOptions, port);
            NetworkServer.OnConnectedEvent = conn => events.Join(conn.connectionId, conn.address);
            NetworkServer.OnDisconnectedEvent = conn => events.Leave(conn.connectionId, "disconnected");
            NetworkServer.RegisterHandler<NetstickReliable>(OnReliable, false);
            NetworkServer.RegisterHandler<NetstickUnreliable>(OnUnreliable, false);
            try
            {
                NetworkServer.Listen(ushort.MaxValue);
            }
            catch (SocketException e)
            {
                throw new BindException("-host " + host + " -port " + port.ToString(CultureInfo.InvariantCulture) + ": " + e.Message, e);
            }
        }

        public void Poll(IServerHandler handler)
        {
            events.DrainServer(handler);
        }

        public void Send(int peer, byte[] message, int length, Channel channel)
        {
            NetworkConnectionToClient conn;
            if (!NetworkServer.connections.TryGetValue(peer, out conn))
            {
                return;
            }
            var data = new ArraySegment<byte>(message, 0, length);
            // Mirror serializes into the connection's batch here: the buffer is free on return.
            if (channel == Channel.Reliable)
            {
                conn.Send(new NetstickReliable { data = data }, Channels.Reliable);
            }
            else
            {
                conn.Send(new NetstickUnreliable { data = data }, Channels.Unreliable);
            }
        }

        public void Disconnect(int peer)
        {
            NetworkConnectionToClient conn;
            if (NetworkServer.connections.TryGetValue(peer, out conn))
            {
                conn.Disconnect();
            }
        }

        public void Stop()
        {
            if (NetworkServer.active)
            {
                // Closes every connection (kcp2k sends its disconnect, Telepathy closes the socket).
                NetworkServer.Shutdown();
            }
        }

        private void OnReliable(NetworkConnectionToClient conn, NetstickReliable msg)
        {
            events.Message(conn.connectionId, msg.data, Channel.Reliable);
        }

        private void OnUnreliable(NetworkConnectionToClient conn, NetstickUnreliable msg)
        {
            events.Message(conn.connectionId, msg.data, Channel.Unreliable);
        }
    }
}
