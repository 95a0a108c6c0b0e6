namespace Netstick.Core
{
    /// <summary>A periodic or one-off action run by a <see cref="Schedule"/>.</summary>
    public interface IScheduledTask
    {
        /// <summary>
        /// Runs the action that was due at <paramref name="dueNs"/>; <paramref name="nowNs"/> is the
        /// monotonic time it really started. Returns false to stop, or true with the next due time.
        /// </summary>
        bool Fire(long dueNs, long nowNs, out long nextDueNs);
    }
}
