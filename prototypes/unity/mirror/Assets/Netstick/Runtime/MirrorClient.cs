using System;
using System.Collections.Generic;
using Mirror;
using Netstick.Core;
using UnityEngine;

namespace Netstick.Unity.MirrorLib
{
    /// <summary>
    /// Netstick.Core's client transport over Mirror's NetworkClient. NetworkClient is static (one
    /// connection per process), so a Mirror client process emulates one player
    /// (players_per_process: 1). A connect that the library gives up before it succeeded is
    /// retried until the core's -connect-timeout-s ends it.
    /// </summary>
    public sealed class MirrorClient : IClientTransport
    {
        private const long RetryDelayNs = 200L * 1000 * 1000;

        private readonly GameObject owner;
        private readonly Options options;
        private readonly EventQueue events = new EventQueue();
        private int player = -1;
        private string host;
        private bool transportCreated;
        private bool wanted;
        private bool connected;
        private long retryAtMonoNs = long.MaxValue;

        public MirrorClient(GameObject owner, Options options)
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

        public void Connect(int player, string host, int port)
        {
            if (this.player >= 0 && this.player != player)
            {
                throw new UsageException("-players: a Mirror client process emulates one player (NetworkClient is static); expected -players 1");
            }
            this.player = player;
            this.host = host;
            wanted = true;
            if (!transportCreated)
            {
                transportCreated = true;
                MirrorTransportFactory.Create(owner, options.Transport, options.TransportOptions, port);
                NetworkClient.OnConnectedEvent = OnConnected;
                NetworkClient.OnDisconnectedEvent = OnDisconnected;
            }
            StartAttempt();
        }

        public void Poll(IClientHandler handler)
        {
            if (wanted && !connected && !NetworkClient.active && Clock.MonoNs() >= retryAtMonoNs)
            {
                StartAttempt();
            }
            events.DrainClient(handler);
        }

        public void Send(int player, byte[] message, int length, Channel channel)
        {
            if (!NetworkClient.isConnected)
            {
                return;
            }
            var data = new ArraySegment<byte>(message, 0, length);
            if (channel == Channel.Reliable)
            {
                NetworkClient.Send(new NetstickReliable { data = data }, Channels.Reliable);
            }
            else
            {
                NetworkClient.Send(new NetstickUnreliable { data = data }, Channels.Unreliable);
            }
        }

        public void Disconnect(int player)
        {
            wanted = false;
            if (NetworkClient.active)
            {
                NetworkClient.Disconnect();
            }
        }

        public double LibraryRttUs(int player)
        {
            // NetworkTime.rtt: EMA of Mirror's own pings (every 0.1 s), 0 until the first pong.
            double rtt = NetworkTime.rtt;
            return NetworkClient.isConnected && rtt > 0 ? rtt * 1e6 : double.NaN;
        }

        private void StartAttempt()
        {
            retryAtMonoNs = long.MaxValue;
            // Registering again replaces the handlers Mirror cleared on the previous disconnect.
            NetworkClient.ReplaceHandler<NetstickReliable>(OnReliable, false);
            NetworkClient.ReplaceHandler<NetstickUnreliable>(OnUnreliable, false);
            NetworkClient.Connect(host);
        }

        private void OnConnected()
        {
            connected = true;
            events.Join(player, "");
        }

        private void OnDisconnected()
        {
            if (connected)
            {
                connected = false;
                wanted = false;
                events.Leave(player, "disconnected by server or transport");
            }
            else if (wanted)
            {
                // The attempt failed before the handshake ended: try again shortly.
                retryAtMonoNs = Clock.MonoNs() + RetryDelayNs;
            }
        }

        private void OnReliable(NetstickReliable msg)
        {
            events.Message(player, msg.data, Channel.Reliable);
        }

        private void OnUnreliable(NetstickUnreliable msg)
        {
            events.Message(player, msg.data, Channel.Unreliable);
        }
    }
}
