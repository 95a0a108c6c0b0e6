using System;
using System.Collections.Generic;

namespace Netstick.Core.Tests
{
    /// <summary>
    /// An in-memory network for the game tests: one server transport and one client transport whose
    /// messages wait in queues until the receiving side's Poll, as a real transport delivers them. The
    /// server sees player p as peer p + 1000. Tests can drop messages and see what was sent when.
    /// </summary>
    internal sealed class MemoryNet
    {
        public const int PeerOffset = 1000;

        public readonly MemoryServer Server;
        public readonly MemoryClient Client;

        /// <summary>Decides per server→client message whether it is lost (type byte, channel).</summary>
        public Func<byte[], Channel, bool> DropToClient = (m, c) => false;

        /// <summary>What both ends declare they carry (a library's limits, in the size tests).</summary>
        public MessageLimits Limits = MessageLimits.Contract;

        public MemoryNet()
        {
            Server = new MemoryServer(this);
            Client = new MemoryClient(this);
        }

        internal static byte[] Copy(byte[] message, int length)
        {
            var b = new byte[length];
            Buffer.BlockCopy(message, 0, b, 0, length);
            return b;
        }
    }

    internal sealed class MemoryServer : IServerTransport
    {
        private readonly MemoryNet net;
        private readonly Queue<Action<IServerHandler>> inbox = new Queue<Action<IServerHandler>>();
        public readonly HashSet<int> Peers = new HashSet<int>();
        public bool Listening;

        /// <summary>Every message the server sent: peer, message, channel, and whether it was inside Poll.</summary>
        public readonly List<Sent> Log = new List<Sent>();
        private bool polling;

        public struct Sent
        {
            public int Peer;
            public byte[] Message;
            public Channel Channel;
            public bool InPoll;
        }

        public MemoryServer(MemoryNet net)
        {
            this.net = net;
        }

        public string Name
        {
            get { return "memory"; }
        }

        public IDictionary<string, string> LibraryVersions
        {
            get { return new Dictionary<string, string> { { "memory", "1" } }; }
        }

        public IDictionary<string, string> EffectiveChannels
        {
            get { return new Dictionary<string, string> { { "reliable", "reliable" }, { "unreliable", "unreliable" } }; }
        }

        public MessageLimits Limits
        {
            get { return net.Limits; }
        }

        public void Start(string host, int port)
        {
            Listening = true;
        }

        internal void Enqueue(Action<IServerHandler> a)
        {
            inbox.Enqueue(a);
        }

        public void Poll(IServerHandler handler)
        {
            polling = true;
            while (inbox.Count > 0)
            {
                inbox.Dequeue()(handler);
            }
            polling = false;
        }

        public void Send(int peer, byte[] message, int length, Channel channel)
        {
            if (!Peers.Contains(peer))
            {
                throw new InvalidOperationException("memory send to peer " + peer + ": not connected");
            }
            byte[] m = MemoryNet.Copy(message, length);
            Log.Add(new Sent { Peer = peer, Message = m, Channel = channel, InPoll = polling });
            if (!net.DropToClient(m, channel))
            {
                net.Client.Enqueue(h => h.OnMessage(peer - MemoryNet.PeerOffset, m, m.Length, channel));
            }
        }

        public void Disconnect(int peer)
        {
            if (Peers.Remove(peer))
            {
                inbox.Enqueue(h => h.OnLeave(peer, "closed by the server"));
                net.Client.Enqueue(h => h.OnDisconnected(peer - MemoryNet.PeerOffset, "peer closed the connection"));
            }
        }

        public void Stop()
        {
            Listening = false;
            foreach (int peer in Peers)
            {
                int p = peer;
                net.Client.Enqueue(h => h.OnDisconnected(p - MemoryNet.PeerOffset, "peer closed the connection: EOF"));
            }
            Peers.Clear();
        }
    }

    internal sealed class MemoryClient : IClientTransport
    {
        private readonly MemoryNet net;
        private readonly Queue<Action<IClientHandler>> inbox = new Queue<Action<IClientHandler>>();
        private readonly HashSet<int> waiting = new HashSet<int>(); // connects before the server listened
        public readonly HashSet<int> Up = new HashSet<int>();
        public double LibRttUs = double.NaN;
        public bool Reliable = true;

        public MemoryClient(MemoryNet net)
        {
            this.net = net;
        }

        public string Name
        {
            get { return "memory"; }
        }

        public IDictionary<string, string> LibraryVersions
        {
            get { return new Dictionary<string, string> { { "memory", "1" } }; }
        }

        public IDictionary<string, string> EffectiveChannels
        {
            get
            {
                return new Dictionary<string, string>
                {
                    { "reliable", Reliable ? "reliable" : "unreliable (best effort)" },
                    { "unreliable", "unreliable" },
                };
            }
        }

        public MessageLimits Limits
        {
            get { return net.Limits; }
        }

        internal void Enqueue(Action<IClientHandler> a)
        {
            inbox.Enqueue(a);
        }

        public void Connect(int player, string host, int port)
        {
            waiting.Add(player);
        }

        public void Poll(IClientHandler handler)
        {
            if (net.Server.Listening)
            {
                foreach (int p in waiting)
                {
                    int player = p;
                    Up.Add(player);
                    net.Server.Peers.Add(player + MemoryNet.PeerOffset);
                    net.Server.Enqueue(h => h.OnJoin(player + MemoryNet.PeerOffset, "memory:" + player));
                    inbox.Enqueue(h => h.OnConnected(player));
                }
                waiting.Clear();
            }
            while (inbox.Count > 0)
            {
                inbox.Dequeue()(handler);
            }
        }

        public void Send(int player, byte[] message, int length, Channel channel)
        {
            if (!Up.Contains(player))
            {
                throw new InvalidOperationException("memory send for player " + player + ": not connected");
            }
            byte[] m = MemoryNet.Copy(message, length);
            int peer = player + MemoryNet.PeerOffset;
            net.Server.Enqueue(h => h.OnMessage(peer, m, m.Length, channel));
        }

        public void Disconnect(int player)
        {
            waiting.Remove(player);
            if (Up.Remove(player))
            {
                int peer = player + MemoryNet.PeerOffset;
                if (net.Server.Peers.Remove(peer))
                {
                    net.Server.Enqueue(h => h.OnLeave(peer, "peer closed the connection: EOF"));
                }
            }
        }

        public double LibraryRttUs(int player)
        {
            return LibRttUs;
        }
    }
}
