using System;
using System.Collections.Generic;
using System.Globalization;

namespace Netstick.Core
{
    /// <summary>
    /// The largest Wire message (the core's whole message, as handed to the transport's Send) a
    /// transport carries on each channel once its library added its own framing (CONTRACT.md §5,
    /// "Message sizes"). The core keeps to it: State and BlockChanges batches are cut below it; a
    /// stream or pingpong probe above it is refused when the process starts (exit 2, the limit named);
    /// any other message above it is the core's error, raised before the library could drop it.
    /// </summary>
    public sealed class MessageLimits
    {
        /// <summary>What the contract allows: a probe of up to 1 MiB on either channel.</summary>
        public static readonly MessageLimits Contract =
            new MessageLimits(Workloads.MaxMessageBytes, Workloads.MaxMessageBytes, "the contract's largest message");

        /// <summary>The smallest limit a transport may declare: one State with one transform.</summary>
        public const int MinBytes = Wire.StateHeaderBytes + Wire.TransformBytes;

        public MessageLimits(int reliableBytes, int unreliableBytes, string source)
        {
            if (reliableBytes < MinBytes || unreliableBytes < MinBytes)
            {
                throw new ArgumentOutOfRangeException("reliableBytes", "message limits below "
                    + MinBytes.ToString(CultureInfo.InvariantCulture) + " bytes cannot carry one transform");
            }
            ReliableBytes = reliableBytes;
            UnreliableBytes = unreliableBytes;
            Source = source ?? "";
        }

        /// <summary>Largest message on the reliable channel, bytes.</summary>
        public int ReliableBytes { get; }

        /// <summary>Largest message on the unreliable channel, bytes.</summary>
        public int UnreliableBytes { get; }

        /// <summary>Where the numbers come from (the library's limit and its framing), for messages.</summary>
        public string Source { get; }

        /// <summary>meta.json's message_limits: what the process carried, for check-logs to hold against the manifest.</summary>
        public IDictionary<string, object> MetaValue()
        {
            return new SortedDictionary<string, object>
            {
                { "reliable_bytes", ReliableBytes },
                { "unreliable_bytes", UnreliableBytes },
            };
        }

        /// <summary>The limit of one channel.</summary>
        public int For(Channel channel)
        {
            return channel == Channel.Reliable ? ReliableBytes : UnreliableBytes;
        }

        /// <summary>Why a message of this many bytes cannot go on the channel, or null when it fits.</summary>
        public string Problem(Channel channel, int bytes, string transport)
        {
            int limit = For(channel);
            if (bytes <= limit)
            {
                return null;
            }
            return string.Format(CultureInfo.InvariantCulture,
                "{0} bytes on the {1} channel: transport {2} carries at most {3} bytes there ({4})",
                bytes, channel == Channel.Reliable ? "reliable" : "unreliable", transport, limit, Source);
        }

        /// <summary>
        /// The stream or pingpong probe of a workload must fit the channel it names: a probe is one
        /// message (its size is the round trip's payload), so it is never split.
        /// </summary>
        public void CheckProbe(Workload workload, string transport)
        {
            if (workload == null || (workload.Name != "stream" && workload.Name != "pingpong"))
            {
                return;
            }
            string problem = Problem(workload.Channel, workload.SizeBytes, transport);
            if (problem != null)
            {
                throw new UsageException("-param size=" + workload.SizeBytes.ToString(CultureInfo.InvariantCulture)
                    + ": " + problem);
            }
        }
    }

    /// <summary>The core built a message over its transport's limit: a bug of the core, never silent.</summary>
    public sealed class MessageTooLargeException : Exception
    {
        public MessageTooLargeException(string message) : base(message) { }
    }
}
