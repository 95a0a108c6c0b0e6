using System.Globalization;

namespace Netstick.Core
{
    /// <summary>
    /// Malformed messages from the network (CONTRACT.md §2, §3.3): never fatal, counted and dropped,
    /// logged as one <c>malformed</c> event per second with the first error of that second. Server and
    /// client count the same way.
    /// </summary>
    public sealed class MalformedCounter
    {
        private long count;
        private string first;

        /// <summary>Counts one dropped message; the first error of the period is kept for the event.</summary>
        public void Drop(string error)
        {
            if (count++ == 0)
            {
                first = error;
            }
        }

        /// <summary>Writes the period's <c>malformed</c> event (if any message was dropped) and starts a new period.</summary>
        public void Flush(EventLog events)
        {
            if (count > 0)
            {
                events.Write(null, "malformed", count.ToString(CultureInfo.InvariantCulture),
                    "error=" + LineLog.Sanitize(first));
                count = 0;
                first = null;
            }
        }
    }
}
