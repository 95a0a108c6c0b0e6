using System.Globalization;
using System.Text;

namespace Netstick.Core
{
    /// <summary><c>client-&lt;k&gt;.rtt.csv</c> (CONTRACT.md §3.2): one row per answered probe or library estimate.</summary>
    public sealed class RttLog : LineLog
    {
        /// <summary>The header of prototypes/contract/columns.py RTT_COLUMNS.</summary>
        public const string Columns = "t_unix_ns,player,seq,rtt_us,kind,send_late_us";

        public RttLog(string path) : base(path, Columns) { }

        /// <summary>Creates <c>&lt;proc&gt;.rtt.csv</c> in logDir.</summary>
        public static RttLog Create(string logDir, string proc)
        {
            return new RttLog(System.IO.Path.Combine(logDir, proc + ".rtt.csv"));
        }

        /// <summary>
        /// One row: tUnixNs when the probe was sent (for <c>lib</c> when the estimate was read), rttUs
        /// in µs, kind <c>net</c>, <c>app</c> or <c>lib</c>, sendLateUs null for <c>lib</c> and unscheduled sends.
        /// Microseconds are written with 3 decimals, as the reference does.
        /// </summary>
        public void Write(long tUnixNs, int player, long seq, double rttUs, string kind, double? sendLateUs)
        {
            var sb = new StringBuilder(64);
            sb.Append(tUnixNs.ToString(CultureInfo.InvariantCulture)).Append(',')
                .Append(player.ToString(CultureInfo.InvariantCulture)).Append(',')
                .Append(seq.ToString(CultureInfo.InvariantCulture)).Append(',')
                .Append(rttUs.ToString("F3", CultureInfo.InvariantCulture)).Append(',')
                .Append(Field(kind)).Append(',');
            if (sendLateUs.HasValue)
            {
                sb.Append(sendLateUs.Value.ToString("F3", CultureInfo.InvariantCulture));
            }
            AppendLine(sb.ToString());
        }
    }
}
