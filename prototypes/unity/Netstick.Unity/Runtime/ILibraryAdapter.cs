using Netstick.Core;

namespace Netstick.Unity
{
    /// <summary>
    /// What one networking library adds to the shared host (<see cref="NetstickHost"/>): its
    /// transports, how its tick and send rates are set, and its server and client connections.
    /// Everything else (options, logs, the game, READY/CONNECTED, exit codes) is Netstick.Core's.
    /// </summary>
    public interface ILibraryAdapter
    {
        /// <summary>The prototype's name as meta.json records it (the manifest's <c>name</c>).</summary>
        string Prototype { get; }

        /// <summary>The transport used when -transport is absent.</summary>
        string DefaultTransport { get; }

        /// <summary>Every name -transport accepts.</summary>
        string[] Transports { get; }

        /// <summary>
        /// Checks what the library cannot do with these options (throws UsageException, exit 2) and
        /// applies its tick and send rates before anything listens or connects.
        /// </summary>
        void Configure(Options options, RateSettings rates);

        /// <summary>The library's server side for options.Transport; not started yet.</summary>
        IServerTransport CreateServer(Options options);

        /// <summary>The library's client side for options.Transport: one connection per player.</summary>
        IClientTransport CreateClient(Options options);
    }
}
