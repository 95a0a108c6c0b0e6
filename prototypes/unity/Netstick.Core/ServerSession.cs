namespace Netstick.Core
{
    /// <summary>One connection as the server sees it: a peer of the transport, and its player once it said hello.</summary>
    internal sealed class ServerSession
    {
        public readonly int Peer;
        public readonly string Remote;
        public bool Joined;
        public uint Player;

        /// <summary>Monotonic time of the last message sent to it, for the keep-alive.</summary>
        public long LastSentMonoNs;

        public ServerSession(int peer, string remote)
        {
            Peer = peer;
            Remote = remote;
        }
    }
}
