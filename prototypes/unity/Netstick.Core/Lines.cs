using System.Globalization;

namespace Netstick.Core
{
    /// <summary>
    /// The NETSTICK lines of CONTRACT.md §2, in the exact grammar of prototypes/contract/lines.py:
    /// <c>NETSTICK READY role=server transport=&lt;name&gt; addr=&lt;host:port&gt; pid=&lt;pid&gt; schema=1</c> and
    /// <c>NETSTICK CONNECTED players=&lt;n&gt; first=&lt;k&gt; connect_s=&lt;seconds&gt;</c>.
    /// The host prints them to standard output and flushes.
    /// </summary>
    public static class Lines
    {
        /// <summary>Log schema version (CONTRACT.md).</summary>
        public const int SchemaVersion = 1;

        /// <summary>The server's readiness line; addr is host:port.</summary>
        public static string Ready(string transport, string addr, int pid)
        {
            return "NETSTICK READY role=server transport=" + transport + " addr=" + addr
                + " pid=" + pid.ToString(CultureInfo.InvariantCulture)
                + " schema=" + SchemaVersion.ToString(CultureInfo.InvariantCulture);
        }

        /// <summary>The server's readiness line from host and port.</summary>
        public static string Ready(string transport, string host, int port, int pid)
        {
            return Ready(transport, host + ":" + port.ToString(CultureInfo.InvariantCulture), pid);
        }

        /// <summary>
        /// A client's line once all its players are connected; connectS is seconds from the first
        /// connection attempt to the last player connected, written with 4 decimals as lines.py does.
        /// </summary>
        public static string Connected(int players, int first, double connectS)
        {
            // lines.py's grammar allows no sign, exponent or NaN: clamp what a clock could produce.
            if (!(connectS >= 0) || double.IsInfinity(connectS))
            {
                connectS = 0;
            }
            return "NETSTICK CONNECTED players=" + players.ToString(CultureInfo.InvariantCulture)
                + " first=" + first.ToString(CultureInfo.InvariantCulture)
                + " connect_s=" + connectS.ToString("F4", CultureInfo.InvariantCulture);
        }
    }
}
