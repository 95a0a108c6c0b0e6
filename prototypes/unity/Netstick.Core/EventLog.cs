using System.Globalization;
using System.Text;

namespace Netstick.Core
{
    /// <summary><c>&lt;proc&gt;.events.csv</c> (CONTRACT.md §3.3).</summary>
    public sealed class EventLog : LineLog
    {
        /// <summary>The header of prototypes/contract/columns.py EVENTS_COLUMNS.</summary>
        public const string Columns = "t_unix_ns,player,event,value,detail";

        public EventLog(string path) : base(path, Columns) { }

        /// <summary>Creates <c>&lt;proc&gt;.events.csv</c> in logDir.</summary>
        public static EventLog Create(string logDir, string proc)
        {
            return new EventLog(System.IO.Path.Combine(logDir, proc + ".events.csv"));
        }

        /// <summary>
        /// One row: player null for a process-level event; value a number or empty; detail
        /// space-separated key=value pairs (build values with <see cref="LineLog.Sanitize"/>). A comma or
        /// line end in value or detail becomes '_', so a row is always one whole line of five fields.
        /// </summary>
        public void Write(long tUnixNs, int? player, string ev, string value, string detail)
        {
            var sb = new StringBuilder(64);
            sb.Append(tUnixNs.ToString(CultureInfo.InvariantCulture)).Append(',');
            if (player.HasValue)
            {
                sb.Append(player.Value.ToString(CultureInfo.InvariantCulture));
            }
            sb.Append(',').Append(Field(ev)).Append(',').Append(Field(value)).Append(',').Append(Field(detail));
            AppendLine(sb.ToString());
        }

        /// <summary>One row stamped now (<see cref="Clock.WallNs"/>).</summary>
        public void Write(int? player, string ev, string value, string detail)
        {
            Write(Clock.WallNs(), player, ev, value, detail);
        }

        /// <summary>A number for the value column, invariant culture (e.g. a connect time in ms with 3 decimals).</summary>
        public static string Number(double v, int decimals)
        {
            return v.ToString("F" + decimals.ToString(CultureInfo.InvariantCulture), CultureInfo.InvariantCulture);
        }
    }
}
