using System.Globalization;
using Mirror;
using Netstick.Core;
using UnityEngine;

namespace Netstick.Unity.MirrorLib
{
    /// <summary>
    /// Mirror for the shared host: transports kcp (kcp2k, the default) and telepathy (TCP).
    /// Mirror has one rate, NetworkServer.tickRate, which is also its send rate on server and
    /// client (NetworkClient.sendRate reads it): batches are flushed and NetworkTime pings sent at
    /// that rate. It is set from -send-rate; the game's tick rate is Netstick.Core's.
    /// </summary>
    public sealed class MirrorAdapter : ILibraryAdapter
    {
        private readonly GameObject owner;

        public MirrorAdapter(GameObject owner)
        {
            this.owner = owner;
        }

        public string Prototype { get { return "unity-mirror"; } }

        public string DefaultTransport { get { return MirrorTransportFactory.Kcp; } }

        public string[] Transports
        {
            get { return new[] { MirrorTransportFactory.Kcp, MirrorTransportFactory.Telepathy }; }
        }

        public void Configure(Options options, RateSettings rates)
        {
            if (options.Role == "client" && options.Players != 1)
            {
                throw new UsageException("-players " + options.Players.ToString(CultureInfo.InvariantCulture)
                    + ": a Mirror client process emulates one player (NetworkClient is static); expected 1");
            }
            NetworkServer.tickRate = Mathf.Max(1, Mathf.RoundToInt((float)rates.SendRateHz));
        }

        public IServerTransport CreateServer(Options options)
        {
            return new MirrorServer(owner, options);
        }

        public IClientTransport CreateClient(Options options)
        {
            return new MirrorClient(owner, options);
        }
    }
}
