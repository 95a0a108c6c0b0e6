using System;
using System.Collections.Generic;
using System.Net;
using System.Net.Sockets;
using Netstick.Core;

namespace Netstick.Mono
{
    /// <summary>
    /// The server side of the tcp transport: one listening socket, one non-blocking connection per
    /// player, all served from the host's thread in <see cref="Poll"/> (readiness from one epoll
    /// instance). Both channels are reliable and ordered (TCP); unreliable messages are carried reliably.
    /// </summary>
    internal sealed class TcpServerTransport : IServerTransport, IWaitable
    {
        private const long ListenerToken = 0;

        private sealed class Peer
        {
            public int Id;
            public TcpConn Conn;
            public Action<byte[], int, Channel> Deliver;
            public bool WatchingWrite;
        }

        private readonly Dictionary<int, Peer> peers = new Dictionary<int, Peer>();
        private readonly List<KeyValuePair<int, string>> leaving = new List<KeyValuePair<int, string>>();
        private readonly EPoll epoll = new EPoll();
        private Socket listener;
        private IServerHandler handler;
        private int nextPeer = 1;

        public TcpServerTransport(IDictionary<string, string> options)
        {
            Sockets.CheckOptions("tcp", options);
        }

        public string Name
        {
            get { return "tcp"; }
        }

        /// <summary>The address bound, host:port.</summary>
        public string Addr { get; private set; }

        public IDictionary<string, string> LibraryVersions
        {
            get { return MonoVersions.Get(); }
        }

        public IDictionary<string, string> EffectiveChannels
        {
            get { return TcpClientTransport.Channels(); }
        }

        public MessageLimits Limits
        {
            get { return MessageLimits.Contract; }
        }

        public void Start(string host, int port)
        {
            try
            {
                IPAddress ip = Sockets.Resolve(host);
                listener = new Socket(ip.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
                // mono sets SO_REUSEADDR, which Linux allows for a listener only where no other socket
                // listens on the port: a second server still fails to bind (exit 3).
                listener.Bind(new IPEndPoint(ip, port));
                listener.Listen(1024);
                listener.Blocking = false;
                Addr = Sockets.Format(listener.LocalEndPoint);
                epoll.Add(listener, ListenerToken, false);
            }
            catch (SocketException e)
            {
                Sockets.CloseQuietly(listener);
                listener = null;
                throw new BindException("tcp listen " + host + ":" + port + ": could not bind: " + e.Message, e);
            }
        }

        public void Poll(IServerHandler h)
        {
            handler = h;
            // Leaves requested by Disconnect are reported here, never inside the caller's own callback.
            if (leaving.Count > 0)
            {
                var now = leaving.ToArray();
                leaving.Clear();
                foreach (var kv in now)
                {
                    h.OnLeave(kv.Key, kv.Value);
                }
            }
            if (listener == null)
            {
                return;
            }
            int n = epoll.Collect();
            for (int i = 0; i < n; i++)
            {
                long token = epoll.Token(i);
                uint ev = epoll.Events(i);
                if (token == ListenerToken)
                {
                    Accept();
                    continue;
                }
                Peer p;
                if (!peers.TryGetValue((int)token, out p) || p.Conn == null)
                {
                    continue; // dropped by a callback earlier in this loop
                }
                TcpConn c = p.Conn;
                if ((ev & EPoll.Out) != 0)
                {
                    c.FlushOutput();
                }
                if ((ev & (EPoll.In | EPoll.Err | EPoll.Hup)) != 0)
                {
                    c.Receive(p.Deliver);
                }
                if (p.Conn == c)
                {
                    if (c.Error != null)
                    {
                        Drop(p, c.Error, true);
                    }
                    else
                    {
                        WatchWrite(p);
                    }
                }
            }
        }

        /// <summary>Watches for writability exactly while output waits (level-triggered epoll would spin otherwise).</summary>
        private void WatchWrite(Peer p)
        {
            bool want = p.Conn.WantsWrite;
            if (want != p.WatchingWrite)
            {
                p.WatchingWrite = want;
                epoll.Modify(p.Conn.Socket, p.Id, want);
            }
        }

        private void Accept()
        {
            while (true)
            {
                Socket s;
                try
                {
                    s = listener.Accept();
                }
                catch (SocketException e)
                {
                    if (e.SocketErrorCode != SocketError.WouldBlock && e.SocketErrorCode != SocketError.TryAgain)
                    {
                        Console.Error.WriteLine("netstick-mono: tcp accept: " + e.Message);
                    }
                    return;
                }
                var p = new Peer { Id = nextPeer++, Conn = new TcpConn(s) };
                Peer captured = p;
                p.Deliver = (msg, len, ch) => handler.OnMessage(captured.Id, msg, len, ch);
                peers[p.Id] = p;
                epoll.Add(s, p.Id, false);
                handler.OnJoin(p.Id, p.Conn.Remote);
            }
        }

        private void Drop(Peer p, string reason, bool report)
        {
            if (p.Conn == null)
            {
                return;
            }
            epoll.Remove(p.Conn.Socket);
            p.Conn.Close();
            p.Conn = null;
            peers.Remove(p.Id);
            if (report)
            {
                handler.OnLeave(p.Id, reason);
            }
        }

        public void Send(int peer, byte[] message, int length, Channel channel)
        {
            Peer p;
            if (!peers.TryGetValue(peer, out p) || p.Conn == null)
            {
                throw new InvalidOperationException("tcp send to peer " + peer + ": not connected");
            }
            if (!p.Conn.Send(message, length, channel))
            {
                // Reported as a leave in the next Poll (the caller may be inside a callback).
                string why = p.Conn.Error;
                Drop(p, why, false);
                leaving.Add(new KeyValuePair<int, string>(peer, why));
                throw new InvalidOperationException(why);
            }
            WatchWrite(p);
        }

        public void Disconnect(int peer)
        {
            Peer p;
            if (peers.TryGetValue(peer, out p))
            {
                Drop(p, "closed by the server", false);
                leaving.Add(new KeyValuePair<int, string>(peer, "closed by the server"));
            }
        }

        public void Stop()
        {
            foreach (Peer p in new List<Peer>(peers.Values))
            {
                // Queued output goes out first where the socket takes it, then the close tells the client.
                p.Conn.FlushOutput();
                Drop(p, "server stopped", false);
            }
            if (listener != null)
            {
                epoll.Remove(listener);
            }
            Sockets.CloseQuietly(listener);
            listener = null;
            epoll.Dispose();
        }

        public void Wait(long timeoutNs)
        {
            if (listener == null || leaving.Count > 0)
            {
                return;
            }
            epoll.Wait(timeoutNs);
        }
    }
}
