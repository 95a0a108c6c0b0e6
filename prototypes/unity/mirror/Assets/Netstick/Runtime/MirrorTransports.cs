using System;
using System.Collections.Generic;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using kcp2k;
using Mirror;
using Netstick.Core;
using UnityEngine;

namespace Netstick.Unity.MirrorLib
{
    /// <summary>
    /// Creates Mirror's low-level transport component (KcpTransport or TelepathyTransport) from
    /// code, with -param t.* options applied before its Awake reads them, and makes it
    /// Transport.active. Defaults are the library's own; only what a t.* option names changes.
    /// </summary>
    public static class MirrorTransportFactory
    {
        public const string Kcp = "kcp";
        public const string Telepathy = "telepathy";

        public static readonly string[] KcpOptions = { "nodelay", "interval_ms", "resend", "timeout_ms", "sndwnd", "rcvwnd", "max_retransmit" };
        public static readonly string[] TelepathyOptions = { "nodelay", "send_timeout_ms", "receive_timeout_ms", "max_message_bytes" };

        public static Transport Create(GameObject owner, string name, IDictionary<string, string> options, int port)
        {
            var holder = new GameObject("Mirror transport (" + name + ")");
            holder.transform.SetParent(owner.transform, false);
            // Inactive until configured: both transports build their sockets' settings in Awake.
            holder.SetActive(false);
            Transport transport;
            if (name == Kcp)
            {
                Check(name, options, KcpOptions);
                var kcp = holder.AddComponent<KcpTransport>();
                kcp.Port = checked((ushort)port);
                kcp.NoDelay = Bool(options, "nodelay", kcp.NoDelay);
                kcp.Interval = (uint)Int(options, "interval_ms", (int)kcp.Interval);
                kcp.FastResend = Int(options, "resend", kcp.FastResend);
                kcp.Timeout = Int(options, "timeout_ms", kcp.Timeout);
                kcp.SendWindowSize = (uint)Int(options, "sndwnd", (int)kcp.SendWindowSize);
                kcp.ReceiveWindowSize = (uint)Int(options, "rcvwnd", (int)kcp.ReceiveWindowSize);
                kcp.MaxRetransmit = (uint)Int(options, "max_retransmit", (int)kcp.MaxRetransmit);
                transport = kcp;
            }
            else
            {
                Check(name, options, TelepathyOptions);
                var tcp = holder.AddComponent<TelepathyTransport>();
                tcp.Port = checked((ushort)port);
                tcp.NoDelay = Bool(options, "nodelay", tcp.NoDelay);
                tcp.SendTimeout = Int(options, "send_timeout_ms", tcp.SendTimeout);
                tcp.ReceiveTimeout = Int(options, "receive_timeout_ms", tcp.ReceiveTimeout);
                // Telepathy's 16 KiB default would refuse a world snapshot's larger pieces; the
                // default carries the contract's largest message (1 MiB) with Mirror's framing.
                int max = Int(options, "max_message_bytes", TelepathyDefaultMaxBytes);
                tcp.serverMaxMessageSize = max;
                tcp.clientMaxMessageSize = max;
                transport = tcp;
            }
            holder.SetActive(true);
            Transport.active = transport;
            return transport;
        }

        // Mirror's framing of one message inside a batch: its 8-byte batch timestamp, the message's
        // size (varint, up to 5 bytes), its 2-byte id and the payload's length (a 4-byte uint in
        // v86, a varint in v96), so 19 bytes at most around the core's Wire bytes.
        private const int MirrorFramingBytes = 8 + 5 + 2 + 4;
        private const int TelepathyDefaultMaxBytes = (1 << 20) + 64;

        // kcp2k at Mirror's default MTU of 1200: Mirror's largest unreliable message is 1184 bytes with
        // its id and length (NetworkMessages.MaxMessageSize(Unreliable), v86.13.4 and v96.11.0), and
        // its reliable one (KcpPeer.ReliableMaxMessageSize(1200, min(rcvwnd, 255))) about 297,433.
        private const int KcpUnreliableMessageBytes = 1184 - 2 - 4;
        private const int KcpReliableMessageBytes = 297000;

        /// <summary>
        /// The largest Wire message each channel carries (Netstick.Core's MessageLimits). Known before
        /// the transport exists (the core asks when it is built); kcp's from kcp2k's limits at the
        /// default MTU less Mirror's framing, Telepathy's from its max_message_bytes.
        /// </summary>
        public static MessageLimits Limits(string name, IDictionary<string, string> options)
        {
            if (name == Kcp)
            {
                return new MessageLimits(KcpReliableMessageBytes, KcpUnreliableMessageBytes,
                    "kcp2k at MTU 1200: Mirror's 1184-byte unreliable messages and about 297 KB reliable ones, less Mirror's id and length");
            }
            int max = Int(options, "max_message_bytes", TelepathyDefaultMaxBytes) - MirrorFramingBytes;
            return new MessageLimits(max, max, "Telepathy's max_message_bytes less Mirror's framing");
        }

        public static IDictionary<string, string> EffectiveChannels(string name)
        {
            var channels = new Dictionary<string, string>();
            channels["reliable"] = "reliable";
            channels["unreliable"] = name == Kcp
                ? "unreliable"
                : "reliable (Telepathy is TCP: Mirror's unreliable channel is carried reliably)";
            return channels;
        }

        /// <summary>Telepathy binds in its listener thread and only logs a failure: try the port first.</summary>
        public static void ProbeTcpPort(int port)
        {
            TcpListener probe = null;
            try
            {
                probe = new TcpListener(IPAddress.IPv6Any, port);
                probe.Server.DualMode = true;
                probe.Start();
            }
            catch (SocketException e)
            {
                throw new BindException("-port " + port.ToString(CultureInfo.InvariantCulture) + ": cannot listen on TCP port (" + e.Message + ")", e);
            }
            finally
            {
                if (probe != null)
                {
                    probe.Stop();
                }
            }
        }

        private static void Check(string transport, IDictionary<string, string> given, string[] known)
        {
            foreach (string key in given.Keys)
            {
                if (Array.IndexOf(known, key) < 0)
                {
                    throw new UsageException("-param t." + key + ": transport " + transport + " has no such option (expected one of " + string.Join(", ", known) + ")");
                }
            }
        }

        private static int Int(IDictionary<string, string> options, string key, int fallback)
        {
            string text;
            if (!options.TryGetValue(key, out text))
            {
                return fallback;
            }
            int value;
            if (!int.TryParse(text, NumberStyles.Integer, CultureInfo.InvariantCulture, out value) || value < 0)
            {
                throw new UsageException("-param t." + key + "=" + text + ": expected an integer >= 0");
            }
            return value;
        }

        private static bool Bool(IDictionary<string, string> options, string key, bool fallback)
        {
            string text;
            if (!options.TryGetValue(key, out text))
            {
                return fallback;
            }
            if (text == "1" || text == "true")
            {
                return true;
            }
            if (text == "0" || text == "false")
            {
                return false;
            }
            throw new UsageException("-param t." + key + "=" + text + ": expected true, false, 1 or 0");
        }
    }
}
