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
