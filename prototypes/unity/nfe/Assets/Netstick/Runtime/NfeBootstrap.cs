using Unity.NetCode;
using UnityEngine.Scripting;

namespace Netstick.Unity.Nfe
{
    /// <summary>
    /// Replaces NFE's default bootstrap: no client or server world at start-up, no auto-connect.
    /// The host creates the worlds once it has parsed the command line (<see cref="NfeWorlds"/>).
    /// </summary>
    [Preserve]
    public sealed class NetstickNfeBootstrap : ClientServerBootstrap
    {
        public override bool Initialize(string defaultWorldName)
        {
            AutoConnectPort = 0;
            CreateLocalWorld(defaultWorldName);
            return true;
        }
    }
}
