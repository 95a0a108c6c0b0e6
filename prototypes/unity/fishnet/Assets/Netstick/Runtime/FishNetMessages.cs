using System;
using FishNet.Broadcast;
using FishNet.Serializing;

namespace Netstick.Unity.FishNetLib
{
    /// <summary>Netstick.Core's Wire bytes; serialized by the methods below (a length and the bytes).</summary>
    public struct WirePayload
    {
        public ArraySegment<byte> Bytes;
    }

    /// <summary>A Wire message as a FishNet broadcast; the channel travels with it.</summary>
    public struct NetstickBroadcast : IBroadcast
    {
        public WirePayload Payload;
    }

    /// <summary>
    /// FishNet's code generation uses these for WirePayload: the receiver gets a segment of the
    /// packet without a copy, valid during the broadcast handler.
    /// </summary>
    public static class WirePayloadSerializers
    {
        public static void WriteWirePayload(this Writer writer, WirePayload value)
        {
            writer.WriteArraySegmentAndSize(value.Bytes);
        }

        public static WirePayload ReadWirePayload(this Reader reader)
        {
            return new WirePayload { Bytes = reader.ReadArraySegmentAndSize() };
        }
    }
}
