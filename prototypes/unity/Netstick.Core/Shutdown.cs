using System.Threading;

namespace Netstick.Core
{
    /// <summary>
    /// The stop request of CONTRACT.md §2 (SIGTERM, SIGINT). The host sets it (the mono host from a
    /// signal handler thread, Unity from Application.quitting) and the core's loop reads it, so it is
    /// safe from any thread; the first reason wins.
    /// </summary>
    public static class Shutdown
    {
        private static string reason;

        /// <summary>Asks the process to stop; later requests keep the first reason.</summary>
        public static void Request(string why)
        {
            Interlocked.CompareExchange(ref reason, why ?? "requested", null);
        }

        /// <summary>Whether a stop was requested.</summary>
        public static bool IsRequested
        {
            get { return Volatile.Read(ref reason) != null; }
        }

        /// <summary>The first reason given, or null.</summary>
        public static string Reason
        {
            get { return Volatile.Read(ref reason); }
        }

        /// <summary>Clears the request (tests, and a host that runs several cores in one process).</summary>
        public static void Reset()
        {
            Volatile.Write(ref reason, null);
        }
    }
}
