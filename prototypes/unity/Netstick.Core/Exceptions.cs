using System;

namespace Netstick.Core
{
    /// <summary>
    /// An error that ends the process with a contract exit code (CONTRACT.md §2). Hosts catch it,
    /// print its message to standard error and exit with <see cref="ExitCode"/>.
    /// </summary>
    public abstract class NetstickException : Exception
    {
        protected NetstickException(string message) : base(message) { }
        protected NetstickException(string message, Exception inner) : base(message, inner) { }

        /// <summary>The process exit code this error maps to.</summary>
        public abstract int ExitCode { get; }
    }

    /// <summary>Bad arguments (exit 2); the message names the flag or key and what was expected.</summary>
    public sealed class UsageException : NetstickException
    {
        public UsageException(string message) : base(message) { }
        public override int ExitCode { get { return Core.ExitCode.BadArgs; } }
    }

    /// <summary>The server could not bind its address (exit 3).</summary>
    public sealed class BindException : NetstickException
    {
        public BindException(string message) : base(message) { }
        public BindException(string message, Exception inner) : base(message, inner) { }
        public override int ExitCode { get { return Core.ExitCode.Bind; } }
    }

    /// <summary>The log directory or a log file could not be created or written (exit 6).</summary>
    public sealed class LogDirException : NetstickException
    {
        public LogDirException(string message) : base(message) { }
        public LogDirException(string message, Exception inner) : base(message, inner) { }
        public override int ExitCode { get { return Core.ExitCode.LogDir; } }
    }

    /// <summary>
    /// A message from the network that does not decode. Never fatal: the receiver counts it as
    /// <c>malformed</c> (CONTRACT.md §2) and drops it.
    /// </summary>
    public sealed class WireException : Exception
    {
        public WireException(WireError kind, string message) : base(message) { Kind = kind; }

        /// <summary>Which of the reference's three wire errors this is.</summary>
        public WireError Kind { get; private set; }
    }

    /// <summary>The wire errors of the reference codec: too short, unknown type, invalid field.</summary>
    public enum WireError
    {
        Short = 0,
        Type = 1,
        Invalid = 2,
    }
}
