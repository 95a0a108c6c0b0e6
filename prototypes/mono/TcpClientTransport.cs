using System;
using System.Collections.Generic;
using System.Net;
using System.Net.Sockets;
using Netstick.Core;

namespace Netstick.Mono
{
    /// <summary>
    /// The client side of the tcp transport: one TCP connection per player, TCP_NODELAY, Telepathy-like
    /// framing (see <see cref="TcpConn"/>). Connects run asynchronously and are retried every 100 ms
    /// (a refused connect included) until they succeed or the core gives the player up with
    /// <see cref="Disconnect"/>; everything else happens in <see cref="Poll"/> on the host's thread.
    /// </summary>
    internal sealed class TcpClientTransport : IClientTransport, IWaitable
    {
        /// <summary>How long after a failed connect attempt the next one starts.</summary>
        public const long RetryNs = 100000000L;

        private sealed class Player
        {
            public int Id;
            public IPEndPoint Server;
            public Socket Connecting; // an attempt in flight
            public long RetryAtNs = long.MaxValue;
            public TcpConn Conn;
            public Action<byte[], int, Channel> Deliver;
            public bool Closed;
            public bool WatchingWrite;
        }

        private readonly Dictionary<int, Player> players = new Dictionary<int, Player>();
        private readonly object doneLock = new object();
        private readonly List<Attempted> done = new List<Attempted>();

        private struct Attempted
        {
            public Player Player;
            public Socket Socket;
            public IAsyncResult Result; // null when the attempt failed at once
        }
        private readonly EPoll epoll = new EPoll();
        private IClientHandler handler;
        private int attempts; // connects in flight
        private long nextRetryNs = long.MaxValue; // the earliest RetryAtNs of any player

        public TcpClientTransport(IDictionary<string, string> options)
        {
            Sockets.CheckOptions("tcp", options);
        }

        /// <summary>effective_channels of both sides: TCP has no unreliable mode.</summary>
        public static IDictionary<string, string> Channels()
        {
            return new Dictionary<string, string>
            {
                { "reliable", "reliable" },
                { "unreliable", "reliable (the transport has no unreliable mode)" },
            };
        }

        public string Name
        {
            get { return "tcp"; }
        }

        public IDictionary<string, string> LibraryVersions
        {
            get { return MonoVersions.Get(); }
        }

        public IDictionary<string, string> EffectiveChannels
        {
            get { return Channels(); }
        }

        public MessageLimits Limits
        {
            get { return MessageLimits.Contract; }
        }

        public double LibraryRttUs(int player)
        {
            return double.NaN; // TCP keeps an estimate in the kernel, but no library exposes it here
        }

        public void Connect(int player, string host, int port)
        {
            var p = new Player { Id = player, Server = new IPEndPoint(Sockets.Resolve(host), port) };
            Player old;
            if (players.TryGetValue(player, out old))
            {
                Close(old);
            }
            players[player] = p;
            p.Deliver = (msg, len, ch) => handler.OnMessage(p.Id, msg, len, ch);
            Attempt(p);
        }

        private void Attempt(Player p)
        {
            p.RetryAtNs = long.MaxValue;
            var s = new Socket(p.Server.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
            s.NoDelay = true;
            p.Connecting = s;
            attempts++;
            try
            {
                s.BeginConnect(p.Server, ar =>
                {
                    // On a thread of the pool: only hand the result over; Poll acts on it.
                    lock (doneLock)
                    {
                        done.Add(new Attempted { Player = p, Socket = s, Result = ar });
                    }
                }, null);
            }
            catch (SocketException)
            {
                lock (doneLock)
                {
                    done.Add(new Attempted { Player = p, Socket = s });
                }
            }
        }

        public void Poll(IClientHandler h)
        {
            handler = h;
            long now = Clock.MonoNs();
            Attempted[] finished = null;
            lock (doneLock)
            {
                if (done.Count > 0)
                {
                    finished = done.ToArray();
                    done.Clear();
                }
            }
            if (finished != null)
            {
                foreach (Attempted a in finished)
                {
                    Completed(a.Player, a.Socket, a.Result, now);
                }
            }
            if (now >= nextRetryNs)
            {
                nextRetryNs = long.MaxValue;
                foreach (Player p in players.Values)
                {
                    if (p.Closed || p.Conn != null || p.Connecting != null || p.RetryAtNs == long.MaxValue)
                    {
                        continue;
                    }
                    if (now >= p.RetryAtNs)
                    {
                        Attempt(p);
                    }
                    else
                    {
                        nextRetryNs = Math.Min(nextRetryNs, p.RetryAtNs);
                    }
                }
            }
            int n = epoll.Collect();
            for (int i = 0; i < n; i++)
            {
                Player p;
                if (!players.TryGetValue((int)epoll.Token(i), out p) || p.Conn == null)
                {
                    continue;
                }
                uint ev = epoll.Events(i);
                TcpConn c = p.Conn;
                if ((ev & EPoll.Out) != 0)
                {
                    c.FlushOutput();
                }
                if ((ev & (EPoll.In | EPoll.Err | EPoll.Hup)) != 0)
                {
                    c.Receive(p.Deliver);
                }
                if (p.Conn != c)
                {
                    continue; // disconnected by a callback
                }
                if (c.Error != null)
                {
                    string why = c.Error;
                    Close(p);
                    h.OnDisconnected(p.Id, why);
                }
                else
                {
                    WatchWrite(p);
                }
            }
        }

        /// <summary>Watches for writability exactly while output waits (level-triggered epoll would spin otherwise).</summary>
        private void WatchWrite(Player p)
        {
            bool want = p.Conn.WantsWrite;
            if (want != p.WatchingWrite)
            {
                p.WatchingWrite = want;
                epoll.Modify(p.Conn.Socket, p.Id, want);
            }
        }

        private void Completed(Player p, Socket s, IAsyncResult result, long now)
        {
            attempts--;
            bool ok = false;
            try
            {
                if (result != null)
                {
                    s.EndConnect(result);
                    ok = s.Connected;
                }
            }
            catch (SocketException)
            {
            }
            catch (ObjectDisposedException)
            {
            }
            if (p.Connecting != s || p.Closed)
            {
                Sockets.CloseQuietly(s);
                return;
            }
            p.Connecting = null;
            if (!ok)
            {
                Sockets.CloseQuietly(s);
                p.RetryAtNs = now + RetryNs; // refused or unreachable: try again until the core gives up
                nextRetryNs = Math.Min(nextRetryNs, p.RetryAtNs);
                return;
            }
            p.Conn = new TcpConn(s);
            epoll.Add(s, p.Id, false);
            handler.OnConnected(p.Id);
        }

        public void Send(int player, byte[] message, int length, Channel channel)
        {
            Player p;
            if (!players.TryGetValue(player, out p) || p.Conn == null)
            {
                throw new InvalidOperationException("tcp send for player " + player + ": not connected");
            }
            if (!p.Conn.Send(message, length, channel))
            {
                throw new InvalidOperationException(p.Conn.Error);
            }
            WatchWrite(p);
        }

        public void Disconnect(int player)
        {
            Player p;
            if (players.TryGetValue(player, out p))
            {
                if (p.Conn != null)
                {
                    p.Conn.FlushOutput();
                }
                Close(p);
            }
        }

        private void Close(Player p)
        {
            p.Closed = true;
            p.RetryAtNs = long.MaxValue;
            if (p.Connecting != null)
            {
                Sockets.CloseQuietly(p.Connecting);
                p.Connecting = null;
            }
            if (p.Conn != null)
            {
                epoll.Remove(p.Conn.Socket);
                p.Conn.Close();
                p.Conn = null;
            }
        }

        public void Wait(long timeoutNs)
        {
            lock (doneLock)
            {
                if (done.Count > 0)
                {
                    return;
                }
            }
            if (attempts > 0 || nextRetryNs != long.MaxValue)
            {
                // A connect completes on another thread, which cannot wake ppoll: look again soon.
                timeoutNs = Math.Min(timeoutNs, 1000000L);
            }
            epoll.Wait(timeoutNs);
        }
    }
}
