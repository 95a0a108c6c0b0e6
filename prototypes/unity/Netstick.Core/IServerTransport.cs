using System.Collections.Generic;

namespace Netstick.Core
{
    /// <summary>
    /// The server side of a transport. The core owns no threads: the host calls <see cref="Poll"/> from
    /// its one thread and received messages are delivered to the handler during that call.
    /// </summary>
    public interface IServerTransport
    {
        /// <summary>The transport name as given to -transport (e.g. "tcp").</summary>
        string Name { get; }

        /// <summary>Listens on host:port; throws <see cref="BindException"/> (exit 3) when it cannot.</summary>
        void Start(string host, int port);

        /// <summary>Delivers joins, messages and leaves that arrived since the last call, on the caller's thread.</summary>
        void Poll(IServerHandler handler);

        /// <summary>Sends message[0..length) to one peer; the buffer may be reused when the call returns.</summary>
        void Send(int peer, byte[] message, int length, Channel channel);

        /// <summary>Closes one peer's connection; its OnLeave follows in a later Poll.</summary>
        void Disconnect(int peer);

        /// <summary>Closes every connection and the listener.</summary>
        void Stop();

        /// <summary>Library name to version, for meta.json's library_versions.</summary>
        IDictionary<string, string> LibraryVersions { get; }

        /// <summary>Logical channel name ("reliable", "unreliable") to what carries it, for meta.json.</summary>
        IDictionary<string, string> EffectiveChannels { get; }

        /// <summary>The largest message the library carries on each channel; the core keeps below it.</summary>
        MessageLimits Limits { get; }
    }
}
