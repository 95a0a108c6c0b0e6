using System;
using System.Collections.Generic;
using Netstick.Core;

namespace Netstick.Unity
{
    /// <summary>
    /// What a library delivered (joins, messages, leaves), held until the core's next Poll so that
    /// the core sees it on its own thread and in order. Message bytes are copied into pooled
    /// buffers, because a library's receive buffer is valid only during its callback.
    /// </summary>
    public sealed class EventQueue
    {
        private enum Kind { Join, Message, Leave }

        private struct Entry
        {
            public Kind Kind;
            public int Id;
            public byte[] Buffer;
            public int Length;
            public Channel Channel;
            public string Text;
        }

        // Libraries with their own I/O threads (Telepathy) call in from those threads.
        private readonly object gate = new object();
        private Queue<Entry> pending = new Queue<Entry>();
        private Queue<Entry> draining = new Queue<Entry>();
        private readonly Stack<byte[]> pool = new Stack<byte[]>();

        public void Join(int id, string remote)
        {
            Add(new Entry { Kind = Kind.Join, Id = id, Text = remote ?? "" });
        }

        public void Leave(int id, string reason)
        {
            Add(new Entry { Kind = Kind.Leave, Id = id, Text = reason ?? "closed" });
        }

        public void Message(int id, byte[] source, int offset, int length, Channel channel)
        {
            byte[] buffer = Rent(length);
            Buffer.BlockCopy(source, offset, buffer, 0, length);
            Add(new Entry { Kind = Kind.Message, Id = id, Buffer = buffer, Length = length, Channel = channel });
        }

        public void Message(int id, ArraySegment<byte> data, Channel channel)
        {
            Message(id, data.Array, data.Offset, data.Count, channel);
        }

        /// <summary>A buffer of at least length bytes to fill and hand to <see cref="Filled"/>.</summary>
        public byte[] Rent(int length)
        {
            lock (gate)
            {
                if (pool.Count > 0 && pool.Peek().Length >= length)
                {
                    return pool.Pop();
                }
            }
            return new byte[Math.Max(length, 512)];
        }

        /// <summary>Queues a rented buffer its caller filled itself (from a native stream).</summary>
        public void Filled(int id, byte[] buffer, int length, Channel channel)
        {
            Add(new Entry { Kind = Kind.Message, Id = id, Buffer = buffer, Length = length, Channel = channel });
        }

        public void DrainServer(IServerHandler handler)
        {
            Queue<Entry> batch = Swap();
            while (batch.Count > 0)
            {
                Entry e = batch.Dequeue();
                if (e.Kind == Kind.Join)
                {
                    handler.OnJoin(e.Id, e.Text);
                }
                else if (e.Kind == Kind.Leave)
                {
                    handler.OnLeave(e.Id, e.Text);
                }
                else
                {
                    handler.OnMessage(e.Id, e.Buffer, e.Length, e.Channel);
                    Return(e.Buffer);
                }
            }
        }

        public void DrainClient(IClientHandler handler)
        {
            Queue<Entry> batch = Swap();
            while (batch.Count > 0)
            {
                Entry e = batch.Dequeue();
                if (e.Kind == Kind.Join)
                {
                    handler.OnConnected(e.Id);
                }
                else if (e.Kind == Kind.Leave)
                {
                    handler.OnDisconnected(e.Id, e.Text);
                }
                else
                {
                    handler.OnMessage(e.Id, e.Buffer, e.Length, e.Channel);
                    Return(e.Buffer);
                }
            }
        }

        private void Add(Entry e)
        {
            lock (gate)
            {
                pending.Enqueue(e);
            }
        }

        private Queue<Entry> Swap()
        {
            lock (gate)
            {
                Queue<Entry> full = pending;
                pending = draining;
                draining = full;
                return full;
            }
        }

        private void Return(byte[] buffer)
        {
            lock (gate)
            {
                // Keep the pool small and its largest buffers on top.
                if (pool.Count < 1024 && (pool.Count == 0 || buffer.Length >= pool.Peek().Length))
                {
                    pool.Push(buffer);
                }
            }
        }
    }
}
