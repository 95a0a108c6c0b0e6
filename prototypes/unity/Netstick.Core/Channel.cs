namespace Netstick.Core
{
    /// <summary>
    /// The two logical channels of the contract (CONTRACT.md §4). The numeric values are what the
    /// transports put on the wire where they need a channel byte, so they must not change.
    /// </summary>
    public enum Channel
    {
        Reliable = 0,
        Unreliable = 1,
    }
}
