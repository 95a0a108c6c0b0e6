using Unity.Netcode.Transports.UTP;

namespace Netstick.Unity.Ngo
{
    /// <summary>
    /// What differs between NGO versions (2.9.2 on the current track, 1.9.1 on the thesis one), one
    /// member per version set: NETSTICK_NGO_2_8 (the asmdef's versionDefines) for 2.8.0 and later,
    /// which read -port and -ip from the command line unless forced and expose GetEndpoint.
    /// </summary>
    public static class NgoVersionSpecific
    {
#if NETSTICK_NGO_2_8
        // NGO 2.x lets -port and -ip on the command line override the connection data unless
        // forced; the contract's -port is the same value, but nothing should depend on that.
        public static void SetConnectionData(UnityTransport transport, string address, ushort port, string listenAddress)
        {
            transport.SetConnectionData(true, address, port, listenAddress);
        }

        // UnityTransport.GetEndpoint (from 2.2.0 on).
        public static string Address(NgoNode node, ulong clientId)
        {
            var endpoint = node.Transport.GetEndpoint(clientId);
            return endpoint.IsValid ? endpoint.Address : "client-" + clientId;
        }
#else
        // Before 2.8.0 NGO reads no connection data from the command line.
        public static void SetConnectionData(UnityTransport transport, string address, ushort port, string listenAddress)
        {
            transport.SetConnectionData(address, port, listenAddress);
        }

        // Without GetEndpoint the remote address is not reachable: name the client id instead.
        public static string Address(NgoNode node, ulong clientId)
        {
            return "client-" + clientId;
        }
#endif
    }
}
