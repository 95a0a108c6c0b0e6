using System;
using System.Net.Sockets;
using Netstick.Core;

namespace Netstick.Mono
{
    /// <summary>
    /// One non-blocking TCP connection carrying messages framed as Mirror's Telepathy does, plus the
    /// Go reference's channel byte: a 4-byte big-endian length, the channel (0 reliable, 1 unreliable),
    /// then the message (byte-compatible with internal/transport/framing). What the kernel does not take
    /// at once waits in an output buffer, written when the socket is writable, so a slow peer never
    /// blocks the host's one thread.
    /// </summary>
    internal sealed class TcpConn
    {
        public const int HeaderBytes = 5;

        /// <summary>Bounds one message, so a corrupt length cannot make a reader allocate gigabytes.</summary>
        public const int MaxMessageBytes = 16 << 20;

        /// <summary>Output a peer may leave unread before the connection is dropped.</summary>
        public const int MaxPendingBytes = 64 << 20;

        public readonly Socket Socket;
        public readonly string Remote;
        // Grows to the largest frame seen: most players never get more than a few KB at once.
        private byte[] inBuf = new byte[8 << 10];
        private int inLen;
        private byte[] outBuf = new byte[0];
        private int outStart;
        private int outLen;
        private byte[] msgBuf = new byte[4096];

        // Frames are built here before the one send(2): one buffer for every connection of the process,
        // which the host's one thread uses one send at a time.
        private static byte[] frameBuf = new byte[64 << 10];

        /// <summary>Why the connection ended (null while open).</summary>
        public string Error;

        public TcpConn(Socket socket)
        {
            Socket = socket;
            socket.Blocking = false;
            socket.NoDelay = true;
            try
            {
                Remote = Sockets.Format(socket.RemoteEndPoint);
            }
            catch (SocketException)
            {
                Remote = "";
            }
        }

        /// <summary>Whether output waits for the socket to become writable.</summary>
        public bool WantsWrite
        {
            get { return outLen > 0; }
        }

        /// <summary>Frames and sends one message; false once the connection failed (see <see cref="Error"/>).</summary>
        public bool Send(byte[] message, int length, Channel channel)
        {
            if (Error != null)
            {
                return false;
            }
            if (length < 0 || length > MaxMessageBytes)
            {
                throw new ArgumentException("tcp send of " + length + " B: a message holds 0.." + MaxMessageBytes + " B");
            }
            int total = HeaderBytes + length;
            if (total > frameBuf.Length)
            {
                frameBuf = new byte[Math.Max(total, frameBuf.Length * 2)];
            }
            byte[] frame = frameBuf;
            frame[0] = (byte)(length >> 24);
            frame[1] = (byte)(length >> 16);
            frame[2] = (byte)(length >> 8);
            frame[3] = (byte)length;
            frame[4] = (byte)channel;
            Buffer.BlockCopy(message, 0, frame, HeaderBytes, length);
            int sent = 0;
            if (outLen == 0)
            {
                // One send(2) per message, as the Go reference writes each frame with one Write.
                SocketError err;
                sent = Socket.Send(frame, 0, total, SocketFlags.None, out err);
                if (err != SocketError.Success && err != SocketError.WouldBlock)
                {
                    Error = "tcp write: " + err;
                    return false;
                }
                if (sent < 0)
                {
                    sent = 0;
                }
            }
            if (sent < total)
            {
                Queue(frame, sent, total - sent);
            }
            return Error == null;
        }

        private void Queue(byte[] data, int offset, int count)
        {
            if (outLen + count > MaxPendingBytes)
            {
                Error = "tcp write: peer left " + outLen + " B unread";
                return;
            }
            if (outStart + outLen + count > outBuf.Length)
            {
                if (outLen + count <= outBuf.Length)
                {
                    Buffer.BlockCopy(outBuf, outStart, outBuf, 0, outLen);
                }
                else
                {
                    var bigger = new byte[Math.Max(outBuf.Length * 2, outLen + count + 4096)];
                    Buffer.BlockCopy(outBuf, outStart, bigger, 0, outLen);
                    outBuf = bigger;
                }
                outStart = 0;
            }
            Buffer.BlockCopy(data, offset, outBuf, outStart + outLen, count);
            outLen += count;
        }

        /// <summary>Writes queued output the socket now takes; false once the connection failed.</summary>
        public bool FlushOutput()
        {
            while (outLen > 0 && Error == null)
            {
                SocketError err;
                int n = Socket.Send(outBuf, outStart, outLen, SocketFlags.None, out err);
                if (err == SocketError.WouldBlock || (err == SocketError.Success && n <= 0))
                {
                    break;
                }
                if (err != SocketError.Success)
                {
                    Error = "tcp write: " + err;
                    return false;
                }
                outStart += n;
                outLen -= n;
            }
            if (outLen == 0)
            {
                outStart = 0;
            }
            return Error == null;
        }

        /// <summary>
        /// Reads what arrived and hands every whole message to deliver (buffer valid during the call). False
        /// once the connection ended: the peer closed it, an error, or a corrupt frame (see <see cref="Error"/>).
        /// </summary>
        public bool Receive(Action<byte[], int, Channel> deliver)
        {
            while (Error == null)
            {
                if (inLen == inBuf.Length)
                {
                    Array.Resize(ref inBuf, inBuf.Length * 2);
                }
                int space = inBuf.Length - inLen;
                SocketError err;
                int n = Socket.Receive(inBuf, inLen, space, SocketFlags.None, out err);
                if (err == SocketError.WouldBlock)
                {
                    break;
                }
                if (err != SocketError.Success)
                {
                    Error = "tcp read: " + err;
                    break;
                }
                if (n == 0)
                {
                    Error = "peer closed the connection: EOF";
                    break;
                }
                inLen += n;
                bool more = n == space; // the kernel may hold more than the buffer took
                if (!Parse(deliver) || !more)
                {
                    break;
                }
            }
            return Error == null;
        }

        private bool Parse(Action<byte[], int, Channel> deliver)
        {
            int pos = 0;
            while (inLen - pos >= HeaderBytes)
            {
                uint n = (uint)(inBuf[pos] << 24 | inBuf[pos + 1] << 16 | inBuf[pos + 2] << 8 | inBuf[pos + 3]);
                byte ch = inBuf[pos + 4];
                if (n > MaxMessageBytes)
                {
                    Error = "frame length " + n + " exceeds " + MaxMessageBytes + " B: stream corrupt";
                    return false;
                }
                if (ch != (byte)Channel.Reliable && ch != (byte)Channel.Unreliable)
                {
                    Error = "frame channel byte " + ch + ": stream corrupt";
                    return false;
                }
                int len = (int)n;
                if (inLen - pos - HeaderBytes < len)
                {
                    if (HeaderBytes + len > inBuf.Length)
                    {
                        // Make room for the whole frame before the next read.
                        var bigger = new byte[HeaderBytes + len];
                        Buffer.BlockCopy(inBuf, pos, bigger, 0, inLen - pos);
                        inBuf = bigger;
                        inLen -= pos;
                        return true;
                    }
                    break;
                }
                msgBuf = Sockets.Fit(msgBuf, len);
                Buffer.BlockCopy(inBuf, pos + HeaderBytes, msgBuf, 0, len);
                pos += HeaderBytes + len;
                deliver(msgBuf, len, (Channel)ch);
                if (Error != null)
                {
                    return false;
                }
            }
            if (pos > 0)
            {
                Buffer.BlockCopy(inBuf, pos, inBuf, 0, inLen - pos);
                inLen -= pos;
            }
            return true;
        }

        /// <summary>Closes the socket; a receive loop still running on it stops at its next message.</summary>
        public void Close()
        {
            if (Error == null)
            {
                Error = "closed";
            }
            Sockets.CloseQuietly(Socket);
        }
    }
}
