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

            // FishNet sends what was queued once per tick: its tick rate is the send rate.
            Manager.TimeManager.SetTickRate((ushort)Math.Max(1, Math.Min(ushort.MaxValue, Math.Round(rates.SendRateHz))));
            // FishNet sets Application.targetFrameRate itself when a connection starts; give it ours.
            // (A server build still raises a rate below the tick rate to tick rate + 15.)
            ushort frames = (ushort)Math.Max(1, Math.Min(MaximumFrameRate, rates.TargetFrameRate));
            Manager.ServerManager.SetFrameRate(frames);
            Manager.ClientManager.SetFrameRate(frames);
            float timeoutS = TimeoutS(options.TransportOptions);
            Tugboat.SetTimeout(timeoutS, true);
            Tugboat.SetTimeout(timeoutS, false);
        }

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
