using System.Collections.Generic;

namespace Netstick.Core
{
    /// <summary>
    /// The client side of a transport: one connection per simulated player, all driven from the host's
    /// one thread through <see cref="Poll"/>.
    /// </summary>
    public interface IClientTransport
    {
        /// <summary>The transport name as given to -transport (e.g. "tcp").</summary>
        string Name { get; }

        /// <summary>Starts connecting one player; retries until the core's connect timeout are the transport's.</summary>
        void Connect(int player, string host, int port);

        /// <summary>Delivers connects, messages and disconnects that arrived since the last call, on the caller's thread.</summary>
        void Poll(IClientHandler handler);

        /// <summary>Sends message[0..length) for one player; the buffer may be reused when the call returns.</summary>
        void Send(int player, byte[] message, int length, Channel channel);

        /// <summary>Closes one player's connection.</summary>
        void Disconnect(int player);

        /// <summary>The library's own RTT estimate for a player in microseconds; NaN when it keeps none.</summary>
        double LibraryRttUs(int player);

        /// <summary>Library name to version, for meta.json's library_versions.</summary>
        IDictionary<string, string> LibraryVersions { get; }

        /// <summary>Logical channel name ("reliable", "unreliable") to what carries it, for meta.json.</summary>
        IDictionary<string, string> EffectiveChannels { get; }

        /// <summary>The largest message the library carries on each channel; the core keeps below it.</summary>
        MessageLimits Limits { get; }
    }
}
