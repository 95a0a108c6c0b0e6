using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Netstick.Core
{
    /// <summary>
    /// A validated workload of CONTRACT.md §5 with every parameter filled in. Only the fields of
    /// <see cref="Name"/>'s workload are meaningful; the others keep their zero values.
    /// </summary>
    public sealed class Workload
    {
        public string Name;

        /// <summary>active, envmod: blocks per player (active) or per step (envmod).</summary>
        public int Blocks;

        /// <summary>active, envmod, rpc-toggle: seconds between actions or steps.</summary>
        public double IntervalS;

        /// <summary>envmod: seconds the interval shrinks per step.</summary>
        public double IntervalChangeS;

        /// <summary>active: keep placing after <see cref="Blocks"/> were placed.</summary>
        public bool Continuous;

        /// <summary>wander: walking speed in m/s.</summary>
        public double SpeedMps;

        /// <summary>wander: side of the square in metres.</summary>
        public double AreaM;

        /// <summary>world: networked blocks the server builds before READY.</summary>
        public int Objects;

        /// <summary>stream, pingpong: whole probe message in bytes, its 18-byte header included.</summary>
        public int SizeBytes;

        /// <summary>stream: probes per second per player.</summary>
        public double RateHz;

        /// <summary>stream, pingpong: the channel of the probes; the periodic probes are always unreliable.</summary>
        public Channel Channel = Channel.Unreliable;

        /// <summary>pingpong: probes per player.</summary>
        public int Count;

        /// <summary>Every parameter with defaults applied, as given (recorded in meta.json's params).</summary>
        public readonly SortedDictionary<string, string> Params = new SortedDictionary<string, string>(System.StringComparer.Ordinal);

        /// <summary>"name key=value ..." for diagnostics.</summary>
        public override string ToString()
        {
            var sb = new StringBuilder(Name);
            foreach (var kv in Params)
            {
                sb.Append(' ').Append(kv.Key).Append('=').Append(kv.Value);
            }
            return sb.ToString();
        }

        internal static string Format(double v)
        {
            return v.ToString("R", CultureInfo.InvariantCulture);
        }
    }
}
