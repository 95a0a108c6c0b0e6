namespace Netstick.Core
{
    /// <summary>Receives what a client transport delivers during <see cref="IClientTransport.Poll"/>.</summary>
    public interface IClientHandler
    {
        /// <summary>Transport-level connect; "connected" in the contract's sense is the welcome message.</summary>
        void OnConnected(int player);

        /// <summary>One whole message; the buffer is valid only during the call.</summary>
        void OnMessage(int player, byte[] message, int length, Channel channel);

        /// <summary>The player's connection ended; reason is a short token for the event log.</summary>
        void OnDisconnected(int player, string reason);
    }
}
