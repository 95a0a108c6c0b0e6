using System;
using Mirror;

namespace Netstick.Unity.MirrorLib
{
    // Netstick.Core's Wire bytes as Mirror messages. One message type per logical channel, so the
    // receiver knows the channel without an extra byte in every message; Mirror's Weaver generates
    // their serializers (ArraySegment<byte>: a length and the bytes, read without a copy).

    /// <summary>A Wire message sent on Mirror's reliable channel.</summary>
    public struct NetstickReliable : NetworkMessage
    {
        public ArraySegment<byte> data;
    }

    /// <summary>A Wire message sent on Mirror's unreliable channel.</summary>
    public struct NetstickUnreliable : NetworkMessage
    {
        public ArraySegment<byte> data;
    }
}
