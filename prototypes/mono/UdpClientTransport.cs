using System;
using System.Collections.Generic;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using Netstick.Core;

namespace Netstick.Mono
{
    /// <summary>
    /// The client side of the udp transport (see <see cref="UdpWire"/>): one connected socket per player,
    /// so the server sees one peer per player and an ICMP port-unreachable surfaces as a refused
    /// receive. The connect request is repeated every 100 ms until accepted (a refused one included)
    /// until the core gives the player up; a connection ends on a disconnect datagram, on ICMP
    /// port-unreachable, or after timeout_ms of silence.
    /// </summary>
    internal sealed class UdpClientTransport : IClientTransport, IWaitable
    {
        private sealed class Player
        {
            public int Id;
            public Socket Socket;
            public string Server;
            public bool Accepted;
            public bool Closed;
            public long NextRequestNs;
            public long LastHeardNs;
            public long LastSentNs;
            public string EndReason; // set when the connection ended; reported in the next Poll
        }

        private readonly long timeoutNs;
        private readonly int sockbuf;
        private readonly Dictionary<int, Player> players = new Dictionary<int, Player>();
        private readonly List<Player> open = new List<Player>();
        private static readonly List<Player> NoPlayers = new List<Player>();
        private readonly EPoll epoll = new EPoll();
        private byte[] recvBuf = new byte[65536];
        private byte[] msgBuf = new byte[65536];
        private byte[] frame = new byte[2048];
        private long nextSweepNs;
        private int handshakes; // players not yet accepted
        private bool ended; // some player's EndReason waits to be reported

        public UdpClientTransport(IDictionary<string, string> options)
        {
            UdpWire.Options(options, out timeoutNs, out sockbuf);
            nextSweepNs = Clock.MonoNs() + timeoutNs / 4;
        }

        public string Name
        {
            get { return "udp"; }
        }

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

        public double LibraryRttUs(int player)
        {
            return double.NaN; // raw UDP keeps no estimate
        }

        public void Connect(int player, string host, int port)
        {
            var server = new IPEndPoint(Sockets.Resolve(host), port);
            Player old;
            if (players.TryGetValue(player, out old))
            {
                Close(old, false);
            }
            var s = new Socket(server.AddressFamily, SocketType.Dgram, ProtocolType.Udp);
            // mono sets SO_REUSEADDR on new sockets, with which Linux may give two players' sockets the
            // same ephemeral port: the server would see them as one peer. Each player needs its own.
            s.SetSocketOption(SocketOptionLevel.Socket, SocketOptionName.ReuseAddress, false);
            UdpWire.SetBuffers(s, sockbuf);
            s.Connect(server); // fixes the peer: its own source port, and ICMP errors reported to it
            s.Blocking = false;
            long now = Clock.MonoNs();
            var p = new Player { Id = player, Socket = s, Server = Sockets.Format(server), LastHeardNs = now };
            players[player] = p;
            open.Add(p);
            handshakes++;
            epoll.Add(s, player, false);
            Request(p, now);
        }

        private void Request(Player p, long now)
        {
            Write(p, UdpWire.ConnectMsg, UdpWire.ConnectMsg.Length);
            p.NextRequestNs = now + UdpWire.DialRetryNs;
        }

        /// <summary>Sends one datagram; a refused send while connected ends the connection.</summary>
        private void Write(Player p, byte[] d, int n)
        {
            SocketError err;
            p.Socket.Send(d, 0, n, SocketFlags.None, out err);
            if (err == SocketError.Success)
            {
                p.LastSentNs = Clock.MonoNs();
                return;
            }
            if (err == SocketError.ConnectionRefused && p.Accepted && p.EndReason == null)
            {
                // The send consumed the socket's pending ICMP error, so the reader will not see it.
                End(p, "udp send to " + p.Server + ": peer unreachable (ICMP port unreachable)");
            }
            // Otherwise best effort: a full buffer drops the datagram; a refused request is repeated.
        }

        public void Poll(IClientHandler h)
        {
            long now = Clock.MonoNs();
            int n = epoll.Collect();
            for (int i = 0; i < n; i++)
            {
                Player p;
                if (players.TryGetValue((int)epoll.Token(i), out p) && !p.Closed)
                {
                    Receive(p, h);
                }
            }
            now = Clock.MonoNs();
            bool sweep = now >= nextSweepNs;
            if (sweep)
            {
                nextSweepNs = now + timeoutNs / 4;
            }
            else if (handshakes == 0 && !ended)
            {
                return; // nothing per player to do: no walk over every player on every poll
            }
            ended = false;
            foreach (Player p in open)
            {
                if (p.Closed)
                {
                    continue;
                }
                if (!p.Accepted)
                {
                    if (now >= p.NextRequestNs)
                    {
                        Request(p, now);
                    }
                    continue;
                }
                if (p.EndReason == null && sweep)
                {
                    if (now - p.LastHeardNs > timeoutNs)
                    {
                        Write(p, UdpWire.DisconnectMsg, 1);
                        End(p, string.Format(CultureInfo.InvariantCulture, "no datagram from {0} for {1}s",
                            p.Server, timeoutNs / 1e9));
                    }
                    else if (now - p.LastSentNs >= timeoutNs / 4)
                    {
                        Write(p, UdpWire.KeepaliveMsg, 1);
                    }
                }
                if (p.EndReason != null)
                {
                    string why = p.EndReason;
                    Close(p, false);
                    h.OnDisconnected(p.Id, why);
                }
            }
            open.RemoveAll(x => x.Closed);
        }

        private void Receive(Player p, IClientHandler h)
        {
            for (int i = 0; i < 4096 && !p.Closed && p.EndReason == null; i++)
            {
                if (i > 0 && p.Socket.Available == 0)
                {
                    return;
                }
                SocketError err;
                int n = p.Socket.Receive(recvBuf, 0, recvBuf.Length, SocketFlags.None, out err);
                if (err == SocketError.WouldBlock)
                {
                    return;
                }
                if (err != SocketError.Success)
                {
                    if (p.Accepted)
                    {
                        End(p, "udp read from " + p.Server + ": " + (err == SocketError.ConnectionRefused
                            ? "peer unreachable (ICMP port unreachable)" : err.ToString()));
                    }
                    // Before the accept a refused request is repeated until the core gives up.
                    return;
                }
                if (n <= 0)
                {
                    continue;
                }
                p.LastHeardNs = Clock.MonoNs();
                switch (recvBuf[0])
                {
                    case UdpWire.Accept:
                        if (!p.Accepted && UdpWire.HasMagic(recvBuf, n))
                        {
                            Accepted(p);
                            h.OnConnected(p.Id);
                        }
                        break;
                    case UdpWire.Reliable:
                    case UdpWire.Unreliable:
                        if (!p.Accepted)
                        {
                            // The server sends data only to accepted players: data proves the accept was lost.
                            Accepted(p);
                            h.OnConnected(p.Id);
                        }
                        if (p.Closed)
                        {
                            return;
                        }
                        Buffer.BlockCopy(recvBuf, 1, msgBuf, 0, n - 1);
                        h.OnMessage(p.Id, msgBuf, n - 1, (Channel)recvBuf[0]);
                        break;
                    case UdpWire.Disconnect:
                        End(p, p.Accepted ? "peer closed the connection" : "server refused the connection");
                        if (!p.Accepted)
                        {
                            // Reported as a failed connect: the core's handler sees a disconnect before the welcome.
                            Accepted(p);
                        }
                        return;
                }
            }
        }

        private void Accepted(Player p)
        {
            p.Accepted = true;
            handshakes--;
        }

        private void End(Player p, string reason)
        {
            if (p.EndReason == null)
            {
                p.EndReason = reason;
                ended = true;
            }
        }

        public void Send(int player, byte[] message, int length, Channel channel)
        {
            Player p;
            if (!players.TryGetValue(player, out p) || p.Closed || !p.Accepted)
            {
                throw new InvalidOperationException("udp send for player " + player + ": not connected");
            }
            int n = UdpWire.Frame(ref frame, message, length, channel);
            Write(p, frame, n);
        }

        public void Disconnect(int player)
        {
            Player p;
            if (players.TryGetValue(player, out p))
            {
                Close(p, true);
            }
        }

        private void Close(Player p, bool notifyPeer)
        {
            if (p.Closed)
            {
                return;
            }
            if (notifyPeer && p.Accepted)
            {
                SocketError err;
                p.Socket.Send(UdpWire.DisconnectMsg, 0, 1, SocketFlags.None, out err);
            }
            if (!p.Accepted)
            {
                handshakes--;
                p.Accepted = true; // no longer counted as a handshake
            }
            p.Closed = true;
            epoll.Remove(p.Socket);
            Sockets.CloseQuietly(p.Socket);
        }

        public void Wait(long timeoutNs)
        {
            long now = Clock.MonoNs();
            long until = nextSweepNs;
            if (ended)
            {
                return; // to be reported by the next Poll
            }
            foreach (Player p in handshakes > 0 ? open : NoPlayers)
            {
                if (p.Closed)
                {
                    continue;
                }
                if (p.EndReason != null)
                {
                    return; // to be reported by the next Poll
                }
                if (!p.Accepted)
                {
                    until = Math.Min(until, p.NextRequestNs);
                }
            }
            epoll.Wait(Math.Min(timeoutNs, Math.Max(0, until - now)));
        }
    }
}
