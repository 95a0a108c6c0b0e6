namespace Netstick.Core
{
    /// <summary>Receives what a server transport delivers during <see cref="IServerTransport.Poll"/>.</summary>
    public interface IServerHandler
    {
        /// <summary>A peer connected at transport level; remote is its address for the log.</summary>
        void OnJoin(int peer, string remote);

        /// <summary>One whole message; the buffer is valid only during the call.</summary>
        void OnMessage(int peer, byte[] message, int length, Channel channel);

        /// <summary>A peer's connection ended; reason is a short token for the event log.</summary>
        void OnLeave(int peer, string reason);
    }
}
