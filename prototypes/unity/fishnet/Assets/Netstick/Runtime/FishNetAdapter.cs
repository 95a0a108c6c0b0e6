using System.Globalization;
using Netstick.Core;

namespace Netstick.Unity.FishNetLib
{
    /// <summary>
    /// FishNet with its Tugboat transport (LiteNetLib over UDP). FishNet's tick rate is its send
    /// rate (set from -send-rate); Application.targetFrameRate is handed to FishNet's managers,
    /// which otherwise set their own when a connection starts.
    /// </summary>
    public sealed class FishNetAdapter : ILibraryAdapter
    {
        private RateSettings rates;

        public string Prototype { get { return "unity-fishnet"; } }

        public string DefaultTransport { get { return "tugboat"; } }

        public string[] Transports { get { return new[] { "tugboat" }; } }

        public void Configure(Options options, RateSettings rates)
        {
            if (options.Role == "client" && options.Players != 1)
            {
                throw new UsageException("-players " + options.Players.ToString(CultureInfo.InvariantCulture)
                    + ": a FishNet client process emulates one player (one NetworkManager per process); expected 1");
            }
            this.rates = rates;
        }

        public IServerTransport CreateServer(Options options)
        {
            return new FishNetServer(options, rates);
        }

        public IClientTransport CreateClient(Options options)
        {
            return new FishNetClient(options, rates);
        }
    }
}
