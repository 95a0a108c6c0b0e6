using System;
using System.Collections.Generic;
using System.Globalization;
using Netstick.Core;
using Unity.Collections;
using Unity.Netcode;
using Unity.Netcode.Transports.UTP;
using UnityEngine;
using Object = UnityEngine.Object;

namespace Netstick.Unity.Ngo
{
    /// <summary>
    /// One NetworkManager with its UnityTransport, created from code on its own root GameObject
    /// (no prefab, no scene settings): the server's, or one client player's. Netstick.Core's Wire
    /// bytes travel as two named messages, one per logical channel, so the receiver knows the
    /// channel: ReliableFragmentedSequenced and Unreliable. (ReliableSequenced, NGO's default, is
    /// capped at one non-fragmented message, about 1.27 KB: a larger world chunk, block change batch or
    /// probe threw OverflowException out of SendNamedMessage; NGO issue #2363.)
    /// </summary>
    public sealed class NgoNode
    {
        public const string ReliableMessage = "netstick.reliable";
        public const string UnreliableMessage = "netstick.unreliable";
        public static readonly string[] TransportOptionKeys =
        {
            "max_payload_bytes", "heartbeat_timeout_ms", "disconnect_timeout_ms", "connect_timeout_ms",
        };

        private readonly GameObject holder;
        private byte[] scratch = new byte[1024];

        public NgoNode(string name, Options options, RateSettings rates)
        {
            holder = new GameObject(name);
            // Inactive until configured: NetworkManager reads its NetworkConfig when it wakes.
            holder.SetActive(false);
            Object.DontDestroyOnLoad(holder);
            Transport = holder.AddComponent<UnityTransport>();
            Manager = holder.AddComponent<NetworkManager>();
            IDictionary<string, string> t = options.TransportOptions;
            foreach (string key in t.Keys)
            {
                if (Array.IndexOf(TransportOptionKeys, key) < 0)
                {
                    throw new UsageException("-param t." + key + ": transport utp has no such option (expected one of "
                        + string.Join(", ", TransportOptionKeys) + ")");
                }
            }
            // A world snapshot's pieces and the state of many players exceed UTP's 6144-byte default.
            Transport.MaxPayloadSize = PayloadBytes(options);
            Transport.HeartbeatTimeoutMS = Int(t, "heartbeat_timeout_ms", Transport.HeartbeatTimeoutMS);
            Transport.DisconnectTimeoutMS = Int(t, "disconnect_timeout_ms", Transport.DisconnectTimeoutMS);
            Transport.ConnectTimeoutMS = Math.Max(1, Int(t, "connect_timeout_ms", Transport.ConnectTimeoutMS));
            // The library keeps retrying its handshake for as long as the contract's connect
            // budget (-connect-timeout-s); the core, not the library, ends a failed connect.
            Transport.MaxConnectAttempts = 1 + (int)Math.Ceiling(options.ConnectTimeoutS * 1000.0 / Transport.ConnectTimeoutMS);
            Manager.NetworkConfig = new NetworkConfig
            {
                NetworkTransport = Transport,
                // NGO's network tick: NetworkVariable and time sync updates; named messages are
                // flushed every frame in NGO's post-late-update.
                TickRate = (uint)Math.Max(1, Math.Round(rates.SendRateHz)),
                ConnectionApproval = false,
                EnableSceneManagement = false,
                PlayerPrefab = null,
                ClientConnectionBufferTimeout = Math.Max(1, (int)Math.Ceiling(options.ConnectTimeoutS)),
            };
            holder.SetActive(true);
        }

        public NetworkManager Manager { get; private set; }

        public UnityTransport Transport { get; private set; }

        /// <summary>Registers the two named messages; call after StartServer/StartClient (the messaging manager exists then).</summary>
        public void Register(Action<ulong, byte[], int, Channel> deliver)
        {
            Manager.CustomMessagingManager.RegisterNamedMessageHandler(ReliableMessage,
                (sender, reader) => Read(sender, reader, Channel.Reliable, deliver));
            Manager.CustomMessagingManager.RegisterNamedMessageHandler(UnreliableMessage,
                (sender, reader) => Read(sender, reader, Channel.Unreliable, deliver));
        }

        public void Send(ulong clientId, byte[] message, int length, Channel channel)
        {
            if (Manager.CustomMessagingManager == null)
            {
                return;
            }
            using var writer = new FastBufferWriter(length, Allocator.Temp);
            writer.WriteBytesSafe(message, length, 0);
            if (channel == Channel.Reliable)
            {
                Manager.CustomMessagingManager.SendNamedMessage(ReliableMessage, clientId, writer, NetworkDelivery.ReliableFragmentedSequenced);
            }
            else
            {
                Manager.CustomMessagingManager.SendNamedMessage(UnreliableMessage, clientId, writer, NetworkDelivery.Unreliable);
            }
        }

        public void Destroy()
        {
            if (Manager != null && Manager.IsListening)
            {
                Manager.Shutdown();
            }
            Object.Destroy(holder, 1f);
        }

        // NGO serialises a message that is not fragmented into a writer of NonFragmentedMessageMaxSize
        // (1296) less 8 bytes (NetworkMessageManager, 1.9.1 and 2.9.2); a named message adds its 8-byte
        // name hash, and NGO's message header takes up to 16 more.
        private const int UnreliableMessageBytes = 1296 - 8 - 8 - 16;
        // What a fragmented message adds to the Wire bytes within UTP's MaxPayloadSize.
        private const int FragmentedOverheadBytes = 64;

        /// <summary>UnityTransport's MaxPayloadSize: t.max_payload_bytes, 64 KiB by default.</summary>
        public static int PayloadBytes(Options options)
        {
            return Int(options.TransportOptions, "max_payload_bytes", 1 << 16);
        }

        /// <summary>The largest Wire message on each channel (Netstick.Core's MessageLimits).</summary>
        public static MessageLimits Limits(Options options)
        {
            return new MessageLimits(PayloadBytes(options) - FragmentedOverheadBytes, UnreliableMessageBytes,
                "NGO: reliable messages fragmented within UTP's MaxPayloadSize, unreliable ones one non-fragmented message of 1296 bytes less NGO's headers");
        }

        public static IDictionary<string, string> Channels()
        {
            var channels = new Dictionary<string, string>();
            channels["reliable"] = "reliable";
            channels["unreliable"] = "unreliable";
            return channels;
        }

        private void Read(ulong sender, FastBufferReader reader, Channel channel, Action<ulong, byte[], int, Channel> deliver)
        {
            int length = reader.Length - reader.Position;
            if (scratch.Length < length)
            {
                scratch = new byte[Math.Max(length, scratch.Length * 2)];
            }
            reader.ReadBytesSafe(ref scratch, length, 0);
            deliver(sender, scratch, length, channel);
        }

        private static int Int(IDictionary<string, string> options, string key, int fallback)
        {
            string text;
            if (!options.TryGetValue(key, out text))
            {
                return fallback;
            }
            int value;
            if (!int.TryParse(text, NumberStyles.Integer, CultureInfo.InvariantCulture, out value) || value <= 0)
            {
                throw new UsageException("-param t." + key + "=" + text + ": expected an integer > 0");
            }
            return value;
        }
    }
}
