using System.Globalization;
using System.Text;

namespace Netstick.Core
{
    /// <summary><c>server.ticks.csv</c> (CONTRACT.md §3.4): one row per tick, written when its work ended.</summary>
    public sealed class TickLog : LineLog
    {
        /// <summary>The header of prototypes/contract/columns.py TICKS_COLUMNS.</summary>
        public const string Columns = "t_unix_ns,tick,tick_late_us,tick_duration_us,players_connected,"
            + "networked_objects,msgs_in,msgs_out,bytes_in,bytes_out";

        public TickLog(string path) : base(path, Columns) { }

        /// <summary>Creates <c>server.ticks.csv</c> in logDir.</summary>
        public static TickLog Create(string logDir)
        {
            return new TickLog(System.IO.Path.Combine(logDir, "server.ticks.csv"));
        }

        /// <summary>
        /// One row: tick lateness against its schedule and the time spent in its work (µs, 3 decimals
        /// as the reference writes them); messages and payload bytes since the previous row.
        /// </summary>
        public void Write(long tUnixNs, long tick, double tickLateUs, double tickDurationUs, int playersConnected,
            int networkedObjects, long msgsIn, long msgsOut, long bytesIn, long bytesOut)
        {
            CultureInfo inv = CultureInfo.InvariantCulture;
            var sb = new StringBuilder(96);
            sb.Append(tUnixNs.ToString(inv)).Append(',')
                .Append(tick.ToString(inv)).Append(',')
                .Append(tickLateUs.ToString("F3", inv)).Append(',')
                .Append(tickDurationUs.ToString("F3", inv)).Append(',')
                .Append(playersConnected.ToString(inv)).Append(',')
                .Append(networkedObjects.ToString(inv)).Append(',')
                .Append(msgsIn.ToString(inv)).Append(',')
                .Append(msgsOut.ToString(inv)).Append(',')
                .Append(bytesIn.ToString(inv)).Append(',')
                .Append(bytesOut.ToString(inv));
            AppendLine(sb.ToString());
        }
    }
}
