using Netstick.Core;

namespace Netstick.Unity.Ngo
{
    /// <summary>
    /// Netcode for GameObjects over Unity Transport (utp). NGO's tick (NetworkConfig.TickRate)
    /// comes from -send-rate; named messages are sent every frame, so the frame rate
    /// (-target-frame-rate) paces them.
    /// </summary>
    public sealed class NgoAdapter : ILibraryAdapter
    {
        private RateSettings rates;

        public string Prototype { get { return "unity-ngo"; } }

        public string DefaultTransport { get { return "utp"; } }

        public string[] Transports { get { return new[] { "utp" }; } }

        public void Configure(Options options, RateSettings rates)
        {
            this.rates = rates;
        }

        public IServerTransport CreateServer(Options options)
        {
            return new NgoServer(options, rates);
        }

        public IClientTransport CreateClient(Options options)
        {
            return new NgoClient(options, rates);
        }
    }
}
