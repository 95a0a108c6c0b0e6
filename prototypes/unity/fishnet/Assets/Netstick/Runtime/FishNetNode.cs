using System;
using System.Collections.Generic;
using System.Globalization;
using FishNet.Managing;
using FishNet.Managing.Object;
using FishNet.Transporting.Tugboat;
using Netstick.Core;
using UnityEngine;
using Object = UnityEngine.Object;

namespace Netstick.Unity.FishNetLib
{
    /// <summary>
    /// FishNet's NetworkManager with a Tugboat transport, created from code: an inactive
    /// GameObject gets the components, an empty prefab collection (FishNet refuses to wake
    /// without one) and the settings, then wakes. FishNet builds its other managers itself.
    /// </summary>
    public sealed class FishNetNode
    {
        public static readonly string[] TransportOptionKeys = { "timeout_s" };

        // FishNet clamps frame rates to this (NetworkManager.MAXIMUM_FRAMERATE, internal).
        private const int MaximumFrameRate = 500;

        public FishNetNode(Options options, RateSettings rates)
        {
            foreach (string key in options.TransportOptions.Keys)
            {
                if (Array.IndexOf(TransportOptionKeys, key) < 0)
                {
                    throw new UsageException("-param t." + key + ": transport tugboat has no such option (expected one of "
                        + string.Join(", ", TransportOptionKeys) + ")");
                }
            }
            var holder = new GameObject("FishNet " + options.Role);
            holder.SetActive(false);
            Object.DontDestroyOnLoad(holder);
            Tugboat = holder.AddComponent<Tugboat>();
            Manager = holder.AddComponent<NetworkManager>();
            Manager.SpawnablePrefabs = ScriptableObject.CreateInstance<SinglePrefabObjects>();
            holder.SetActive(true);
            // The adapter starts the server itself: a Dedicated Server build would otherwise start
            // it again on its first frame (StartForHeadless), and 4.7.2 tears the running socket
            // down to do so, right after READY.
            Manager.ServerManager.SetStartOnHeadless(false);

            // FishNet sends what was queued once per tick: its tick rate is the send rate.
            Manager.TimeManager.SetTickRate((ushort)Math.Max(1, Math.Min(ushort.MaxValue, Math.Round(rates.SendRateHz))));
            // FishNet sets Application.targetFrameRate itself when a connection starts; give it ours.
            // (A server build still raises a rate below the tick rate to tick rate + 15.)
            ushort frames = (ushort)Math.Max(1, Math.Min(MaximumFrameRate, rates.TargetFrameRate));
            Manager.ServerManager.SetFrameRate(frames);
            Manager.ClientManager.SetFrameRate(frames);
            ApplyTimeout(options.TransportOptions);
        }

#if NETSTICK_FISHNET_4_3
        private void ApplyTimeout(IDictionary<string, string> transportOptions)
        {
            float timeoutS = TimeoutS(transportOptions);
            Tugboat.SetTimeout(timeoutS, true);
            Tugboat.SetTimeout(timeoutS, false);
        }
#else
        // FishNet 4.2.2's Tugboat.SetTimeout does nothing, and every start sets LiteNetLib's
        // DisconnectTimeout to 1800 s (Tugboat.cs MAX_TIMEOUT_SECONDS): a client notices a dead
        // server after 30 minutes whatever is asked, so asking is refused. The server drops a
        // silent client through ServerManager's remote timeout instead (60 s by default).
        private void ApplyTimeout(IDictionary<string, string> transportOptions)
        {
            if (transportOptions.ContainsKey("timeout_s"))
            {
                throw new UsageException("-param t.timeout_s: FishNet 4.2.2's Tugboat ignores it (its peers time out after 1800 s); the thesis track runs with that");
            }
            Manager.ServerManager.SetRemoteClientTimeout(RemoteTimeoutType.Development, (ushort)Math.Ceiling(TimeoutS(transportOptions)));
        }
#endif

        /// <summary>
        /// The largest Wire message on each channel (Netstick.Core's MessageLimits): a combined packet
        /// of Tugboat's MTU less FishNet's 1-byte reserve, its 4-byte tick, 2-byte packet id, and the
        /// broadcast's 2-byte key and 4-byte length, with 16 bytes to spare. Unreliable packets over
        /// the MTU would be sent reliably by FishNet without a word (TransportManager
        /// CheckSetReliableChannel), so the core cuts its States below it. Reliable packets are split
        /// by FishNet; 4.7.2 caps a split packet at MaximumClientPacketSize (20480).
        /// </summary>
#if NETSTICK_FISHNET_4_3
        // 4.7.2: MTU 1350 less LiteNetLib's 68-byte header.
        public static readonly MessageLimits Limits = new MessageLimits(20480 - 32, 1350 - 68 - 29,
            "FishNet 4.7.2's Tugboat: MTU 1282 unreliable, split reliable packets up to 20480 bytes");
#else
        // 4.2.2: Tugboat's MTU of 1023 for every channel; split reliable packets have no cap.
        public static readonly MessageLimits Limits = new MessageLimits(Workloads.MaxMessageBytes, 1023 - 29,
            "FishNet 4.2.2's Tugboat: MTU 1023 unreliable");
#endif

        public NetworkManager Manager { get; private set; }

        public Tugboat Tugboat { get; private set; }

        public static IDictionary<string, string> Channels()
        {
            var channels = new Dictionary<string, string>();
            channels["reliable"] = "reliable";
            channels["unreliable"] = "unreliable";
            return channels;
        }

        private static float TimeoutS(IDictionary<string, string> options)
        {
            string text;
            if (!options.TryGetValue("timeout_s", out text))
            {
                return 10f;
            }
            float value;
            if (!float.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out value) || !(value > 0))
            {
                throw new UsageException("-param t.timeout_s=" + text + ": expected seconds > 0");
            }
            return value;
        }
    }
}
