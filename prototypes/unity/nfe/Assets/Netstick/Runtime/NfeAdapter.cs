using Netstick.Core;

namespace Netstick.Unity.Nfe
{
    /// <summary>
    /// Netcode for Entities over Unity Transport (utp). ClientServerTickRate: SimulationTickRate
    /// from -tick-rate, NetworkTickRate (snapshots) from -send-rate, one simulation step per
    /// frame, and BusyWait so that -target-frame-rate alone sets Application.targetFrameRate.
    /// </summary>
    public sealed class NfeAdapter : ILibraryAdapter
    {
        private RateSettings rates;

        public string Prototype { get { return "unity-nfe"; } }

        public string DefaultTransport { get { return "utp"; } }

        public string[] Transports { get { return new[] { "utp" }; } }

        public void Configure(Options options, RateSettings rates)
        {
            // NFE sends at most once a simulation tick: a NetworkTickRate above SimulationTickRate
            // throws in development builds (ClientServerTickRate.Validate) and is silently lowered
            // in release ones, while meta.json would record the higher rate.
            if (rates.SendRateHz > rates.TickRateHz)
            {
                throw new UsageException("-send-rate " + rates.SendRateHz.ToString(System.Globalization.CultureInfo.InvariantCulture)
                    + ": NFE sends at most once a tick; expected at most -tick-rate "
                    + rates.TickRateHz.ToString(System.Globalization.CultureInfo.InvariantCulture));
            }
            this.rates = rates;
        }

        public IServerTransport CreateServer(Options options)
        {
            return new NfeServer(options, rates);
        }

        public IClientTransport CreateClient(Options options)
        {
            return new NfeClient(options);
        }
    }
}
