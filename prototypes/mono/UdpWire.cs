using System;
using System.Collections.Generic;
using System.Net.Sockets;
using Netstick.Core;

namespace Netstick.Mono
{
    /// <summary>
    /// The datagram format of the Go reference's udp transport (internal/transport/udp/wire.go), so a mono
    /// client can play against the Go server and the reverse: the first byte is the type, reliable data
    /// 0x00 and unreliable data 0x01 (the channel number), connect 0x02 and accept 0x03 (both followed by
    /// the magic "NSU1"), disconnect 0x04, keepalive 0x05. Both channels are carried best effort: no
    /// acknowledgement, no retransmission, no ordering, like the reference.
    /// </summary>
    internal static class UdpWire
    {
        public const byte Reliable = 0x00;
        public const byte Unreliable = 0x01;
        public const byte Connect = 0x02;
        public const byte Accept = 0x03;
        public const byte Disconnect = 0x04;
        public const byte Keepalive = 0x05;

        /// <summary>The largest message: the largest UDP payload over IPv4 minus the type byte.</summary>
        public const int MaxMessageBytes = 65507 - 1;

        /// <summary>One message is one datagram, on either channel.</summary>
        public static readonly MessageLimits Limits =
            new MessageLimits(MaxMessageBytes, MaxMessageBytes, "one UDP datagram of 65,507 bytes less the type byte");

        public const int DefaultTimeoutMs = 3000;
        public const int DefaultSockbuf = 4 << 20;

        /// <summary>How often a client repeats its connect request until accepted.</summary>
        public const long DialRetryNs = 100000000L;

        public static readonly byte[] ConnectMsg = { Connect, (byte)'N', (byte)'S', (byte)'U', (byte)'1' };
        public static readonly byte[] AcceptMsg = { Accept, (byte)'N', (byte)'S', (byte)'U', (byte)'1' };
        public static readonly byte[] DisconnectMsg = { Disconnect };
        public static readonly byte[] KeepaliveMsg = { Keepalive };

        /// <summary>Whether a connect or accept datagram carries the magic (stray datagrams create no connection).</summary>
        public static bool HasMagic(byte[] d, int n)
        {
            return n == 5 && d[1] == 'N' && d[2] == 'S' && d[3] == 'U' && d[4] == '1';
        }

        /// <summary>The transport's options: timeout_ms and sockbuf, as the reference's.</summary>
        public static void Options(IDictionary<string, string> opts, out long timeoutNs, out int sockbuf)
        {
            Sockets.CheckOptions("udp", opts, "timeout_ms", "sockbuf");
            timeoutNs = Sockets.IntOption("udp", opts, "timeout_ms", DefaultTimeoutMs, 100, 3600000) * 1000000L;
            sockbuf = Sockets.IntOption("udp", opts, "sockbuf", DefaultSockbuf, 0, 1 << 30);
        }

        /// <summary>Raises the kernel buffers (capped by net.core.[rw]mem_max); a failure only costs drops under bursts.</summary>
        public static void SetBuffers(Socket s, int size)
        {
            if (size <= 0)
            {
                return;
            }
            try
            {
                s.ReceiveBufferSize = size;
                s.SendBufferSize = size;
            }
            catch (SocketException)
            {
            }
        }

        /// <summary>effective_channels of both sides: UDP has no reliable mode.</summary>
        public static IDictionary<string, string> Channels()
        {
            return new Dictionary<string, string>
            {
                { "reliable", "unreliable (the transport has no reliable mode; carried best effort)" },
                { "unreliable", "unreliable" },
            };
        }

        /// <summary>Puts the type byte before a message in frame (grown if needed); returns the datagram length.</summary>
        public static int Frame(ref byte[] frame, byte[] message, int length, Netstick.Core.Channel channel)
        {
            if (length < 0 || length > MaxMessageBytes)
            {
                throw new ArgumentException("udp send of " + length + " B: a message holds 0.." + MaxMessageBytes + " B");
            }
            if (frame.Length < length + 1)
            {
                frame = new byte[Math.Max(length + 1, frame.Length * 2)];
            }
            frame[0] = (byte)channel;
            Buffer.BlockCopy(message, 0, frame, 1, length);
            return length + 1;
        }
    }
}
