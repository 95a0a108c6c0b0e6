namespace Netstick.Core
{
    /// <summary>Exit codes of CONTRACT.md §2.</summary>
    public static class ExitCode
    {
        /// <summary>Finished: duration elapsed or SIGTERM/SIGINT received, logs complete.</summary>
        public const int Ok = 0;
        /// <summary>Internal error (a bug; the message says where).</summary>
        public const int Internal = 1;
        /// <summary>Bad arguments: the message names the flag or key and what was expected.</summary>
        public const int BadArgs = 2;
        /// <summary>Server: could not bind -host:-port.</summary>
        public const int Bind = 3;
        /// <summary>Client: a player could not connect within -connect-timeout-s.</summary>
        public const int Connect = 4;
        /// <summary>Client: the connection to the server was lost during the run.</summary>
        public const int Lost = 5;
        /// <summary>Could not create or write the log directory.</summary>
        public const int LogDir = 6;
    }
}
