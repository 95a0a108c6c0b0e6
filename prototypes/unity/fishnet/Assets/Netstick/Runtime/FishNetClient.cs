using System;
using System.Collections.Generic;
using FishNet.Transporting;
using Netstick.Core;
using Channel = Netstick.Core.Channel;
using FishChannel = FishNet.Transporting.Channel;

namespace Netstick.Unity.FishNetLib
{
    /// <summary>
    /// Netstick.Core's client transport over FishNet's ClientManager. A FishNet NetworkManager
    /// has one client connection and FishNet keeps one NetworkManager per process (its
    /// persistence rule destroys a second, InstanceFinder is static): one player per client
    /// process. A connect that fails before it started is retried until the core's
    /// -connect-timeout-s ends it.
    /// </summary>
    public sealed class FishNetClient : IClientTransport
    {
        private const long RetryDelayNs = 200L * 1000 * 1000;

        private readonly Options options;
        private readonly RateSettings rates;
        private readonly EventQueue events = new EventQueue();
        private FishNetNode node;
        private int player = -1;
        private string host;
        private ushort port;
        private bool wanted;
        private bool connected;
        private long retryAtMonoNs = long.MaxValue;

        public FishNetClient(Options options, RateSettings rates)
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

        public void Connect(int player, string host, int port)
        {
            if (this.player >= 0 && this.player != player)
            {
                throw new UsageException("-players: a FishNet client process emulates one player; expected -players 1");
            }
            this.player = player;
            this.host = host;
            this.port = checked((ushort)port);
            wanted = true;
            if (node == null)
            {
                node = new FishNetNode(options, rates);
                node.Manager.ClientManager.OnClientConnectionState += OnState;
                node.Manager.ClientManager.RegisterBroadcast<NetstickBroadcast>(OnBroadcast);
            }
            node.Manager.ClientManager.StartConnection(host, this.port);
        }

        public void Poll(IClientHandler handler)
        {
            if (wanted && !connected && Clock.MonoNs() >= retryAtMonoNs)
            {
                retryAtMonoNs = long.MaxValue;
                node.Manager.ClientManager.StartConnection(host, port);
            }
            events.DrainClient(handler);
        }

        public void Send(int player, byte[] message, int length, Channel channel)
        {
            if (!connected)
            {
                return;
            }
            var msg = new NetstickBroadcast { Payload = new WirePayload { Bytes = new ArraySegment<byte>(message, 0, length) } };
            node.Manager.ClientManager.Broadcast(msg, channel == Channel.Reliable ? FishChannel.Reliable : FishChannel.Unreliable);
        }

        public void Disconnect(int player)
        {
            wanted = false;
            if (node != null)
            {
                node.Manager.ClientManager.StopConnection();
            }
        }

        public double LibraryRttUs(int player)
        {
            // TimeManager.RoundTripTime: whole ms from FishNet's pings (every second), measured
            // in ticks and so quantised to the tick; 0 until the first pong.
            if (!connected)
            {
                return double.NaN;
            }
            long rttMs = node.Manager.TimeManager.RoundTripTime;
            return rttMs > 0 ? rttMs * 1000.0 : double.NaN;
        }

        private void OnState(ClientConnectionStateArgs args)
        {
            if (args.ConnectionState == LocalConnectionState.Started)
            {
                connected = true;
                events.Join(player, "");
            }
            else if (args.ConnectionState == LocalConnectionState.Stopped)
            {
                if (connected)
                {
                    connected = false;
                    wanted = false;
                    events.Leave(player, "disconnected by server or transport");
                }
                else if (wanted)
                {
                    retryAtMonoNs = Clock.MonoNs() + RetryDelayNs;
                }
            }
        }

        private void OnBroadcast(NetstickBroadcast msg, FishChannel channel)
        {
            events.Message(player, msg.Payload.Bytes, channel == FishChannel.Reliable ? Channel.Reliable : Channel.Unreliable);
        }
    }
}
