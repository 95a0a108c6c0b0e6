using System;
using System.Collections.Generic;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using Netstick.Core;

namespace Netstick.Mono
{
    /// <summary>
    /// The server side of the udp transport (the reference's raw UDP, see <see cref="UdpWire"/>): ONE
    /// socket for every player, peers told apart by their address; a peer silent for timeout_ms is gone,
    /// and every peer hears at least a keep-alive every timeout_ms/4.
    /// </summary>
    internal sealed class UdpServerTransport : IServerTransport, IWaitable
    {
        private sealed class Peer
        {
            public int Id;
            public IPEndPoint EndPoint;
            public string Remote;
            public long LastHeardNs;
            public long LastSentNs;
        }

        private readonly long timeoutNs;
        private readonly int sockbuf;
        private readonly Dictionary<IPEndPoint, Peer> byAddr = new Dictionary<IPEndPoint, Peer>();
        private readonly Dictionary<int, Peer> byId = new Dictionary<int, Peer>();
        private readonly List<KeyValuePair<int, string>> leaving = new List<KeyValuePair<int, string>>();
        private readonly Poller poller = new Poller();
        private readonly List<Peer> expired = new List<Peer>();
        private Socket socket;
        private byte[] recvBuf = new byte[65536];
        private byte[] msgBuf = new byte[65536];
        private byte[] frame = new byte[2048];
        private EndPoint any;
        private int nextPeer = 1;
        private long nextSweepNs;

        public UdpServerTransport(IDictionary<string, string> options)
        {
            UdpWire.Options(options, out timeoutNs, out sockbuf);
        }

        public string Name
        {
            get { return "udp"; }
        }

        /// <summary>The address bound, host:port.</summary>
        public string Addr { get; private set; }

        public IDictionary<string, string> LibraryVersions
        {
            get { return MonoVersions.Get(); }
        }

        public IDictionary<string, string> EffectiveChannels
        {
            get { return UdpWire.Channels(); }
        }

        public MessageLimits Limits
        {
            get { return UdpWire.Limits; }
        }

        public void Start(string host, int port)
        {
            try
            {
                IPAddress ip = Sockets.Resolve(host);
                socket = new Socket(ip.AddressFamily, SocketType.Dgram, ProtocolType.Udp);
                // mono sets SO_REUSEADDR on new sockets, which lets a second server bind a busy UDP port;
                // it must fail instead (exit 3).
                socket.SetSocketOption(SocketOptionLevel.Socket, SocketOptionName.ReuseAddress, false);
                socket.Bind(new IPEndPoint(ip, port));
                socket.Blocking = false;
                UdpWire.SetBuffers(socket, sockbuf);
                any = new IPEndPoint(ip.AddressFamily == AddressFamily.InterNetwork ? IPAddress.Any : IPAddress.IPv6Any, 0);
                Addr = Sockets.Format(socket.LocalEndPoint);
            }
            catch (SocketException e)
            {
                Sockets.CloseQuietly(socket);
                socket = null;
                throw new BindException("udp listen " + host + ":" + port + ": could not bind: " + e.Message, e);
            }
            nextSweepNs = Clock.MonoNs() + timeoutNs / 4;
        }

        public void Poll(IServerHandler h)
        {
            if (leaving.Count > 0)
            {
                var now = leaving.ToArray();
                leaving.Clear();
                foreach (var kv in now)
                {
                    h.OnLeave(kv.Key, kv.Value);
                }
            }
            if (socket == null)
            {
                return;
            }
            poller.Clear();
            poller.Add(socket, false);
            if (poller.Wait(0) > 0)
            {
                Receive(h);
            }
            long t = Clock.MonoNs();
            if (t >= nextSweepNs)
            {
                Sweep(h, t);
                nextSweepNs = t + timeoutNs / 4;
            }
        }

        private void Receive(IServerHandler h)
        {
            // Bounded, so a flood cannot starve the tick: what is left is read in the next Poll.
            for (int i = 0; i < 4096; i++)
            {
                if (i > 0 && socket.Available == 0)
                {
                    return;
                }
                EndPoint from = any;
                int n;
                try
                {
                    n = socket.ReceiveFrom(recvBuf, 0, recvBuf.Length, SocketFlags.None, ref from);
                }
                catch (SocketException)
                {
                    return; // WouldBlock, or an error of an unconnected socket: nothing to read now
                }
                if (n > 0)
                {
                    Handle(h, (IPEndPoint)from, n);
                }
            }
        }

        private void Handle(IServerHandler h, IPEndPoint from, int n)
        {
            long now = Clock.MonoNs();
            Peer p;
            byAddr.TryGetValue(from, out p);
            switch (recvBuf[0])
            {
                case UdpWire.Reliable:
                case UdpWire.Unreliable:
                    if (p == null)
                    {
                        // A client we do not know (timed out, or from before a restart): tell it.
                        SendRaw(UdpWire.DisconnectMsg, UdpWire.DisconnectMsg.Length, from);
                        return;
                    }
                    p.LastHeardNs = now;
                    Buffer.BlockCopy(recvBuf, 1, msgBuf, 0, n - 1);
                    h.OnMessage(p.Id, msgBuf, n - 1, (Channel)recvBuf[0]);
                    break;
                case UdpWire.Keepalive:
                    if (p == null)
                    {
                        SendRaw(UdpWire.DisconnectMsg, UdpWire.DisconnectMsg.Length, from);
                        return;
                    }
                    p.LastHeardNs = now;
                    break;
                case UdpWire.Connect:
                    if (!UdpWire.HasMagic(recvBuf, n))
                    {
                        return;
                    }
                    if (p != null)
                    {
                        p.LastHeardNs = now; // a repeated request: the accept was lost
                        SendRaw(UdpWire.AcceptMsg, UdpWire.AcceptMsg.Length, from);
                        p.LastSentNs = now;
                        return;
                    }
                    p = new Peer { Id = nextPeer++, EndPoint = from, Remote = Sockets.Format(from), LastHeardNs = now, LastSentNs = now };
                    byAddr[from] = p;
                    byId[p.Id] = p;
                    SendRaw(UdpWire.AcceptMsg, UdpWire.AcceptMsg.Length, from);
                    h.OnJoin(p.Id, p.Remote);
                    break;
                case UdpWire.Disconnect:
                    if (p != null)
                    {
                        Remove(p);
                        h.OnLeave(p.Id, "peer closed the connection");
                    }
                    break;
            }
        }

        private void Sweep(IServerHandler h, long now)
        {
            expired.Clear();
            foreach (Peer p in byId.Values)
            {
                if (now - p.LastHeardNs > timeoutNs)
                {
                    expired.Add(p);
                    continue;
                }
                if (now - p.LastSentNs >= timeoutNs / 4)
                {
                    SendRaw(UdpWire.KeepaliveMsg, UdpWire.KeepaliveMsg.Length, p.EndPoint);
                    p.LastSentNs = now;
                }
            }
            foreach (Peer p in expired)
            {
                SendRaw(UdpWire.DisconnectMsg, UdpWire.DisconnectMsg.Length, p.EndPoint);
                Remove(p);
                h.OnLeave(p.Id, string.Format(CultureInfo.InvariantCulture, "no datagram from {0} for {1}s",
                    p.Remote, timeoutNs / 1e9));
            }
        }

        private void Remove(Peer p)
        {
            byAddr.Remove(p.EndPoint);
            byId.Remove(p.Id);
        }

        private void SendRaw(byte[] d, int n, EndPoint to)
        {
            try
            {
                socket.SendTo(d, 0, n, SocketFlags.None, to);
            }
            catch (SocketException)
            {
                // Best effort: a full buffer or an unreachable peer drops the datagram, as UDP does.
            }
        }

        public void Send(int peer, byte[] message, int length, Channel channel)
        {
            Peer p;
            if (!byId.TryGetValue(peer, out p))
            {
                throw new InvalidOperationException("udp send to peer " + peer + ": not connected");
            }
            int n = UdpWire.Frame(ref frame, message, length, channel);
            SendRaw(frame, n, p.EndPoint);
            p.LastSentNs = Clock.MonoNs();
        }

        public void Disconnect(int peer)
        {
            Peer p;
            if (byId.TryGetValue(peer, out p))
            {
                SendRaw(UdpWire.DisconnectMsg, UdpWire.DisconnectMsg.Length, p.EndPoint);
                Remove(p);
                leaving.Add(new KeyValuePair<int, string>(peer, "closed by the server"));
            }
        }

        public void Stop()
        {
            if (socket == null)
            {
                return;
            }
            // Every player hears that the server stopped, so clients notice at once rather than after the timeout.
            foreach (Peer p in byId.Values)
            {
                SendRaw(UdpWire.DisconnectMsg, UdpWire.DisconnectMsg.Length, p.EndPoint);
            }
            byId.Clear();
            byAddr.Clear();
            Sockets.CloseQuietly(socket);
            socket = null;
        }

        public void Wait(long timeoutNs)
        {
            if (socket == null || leaving.Count > 0)
            {
                return;
            }
            long untilSweep = nextSweepNs - Clock.MonoNs();
            poller.Clear();
            poller.Add(socket, false);
            poller.Wait(Math.Min(timeoutNs, Math.Max(0, untilSweep)));
        }
    }
}
