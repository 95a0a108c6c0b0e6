using System;
using System.Collections.Generic;
using System.Globalization;

namespace Netstick.Core
{
    /// <summary>
    /// The workloads of CONTRACT.md §5: their names, parameters, defaults and validation, in agreement
    /// with prototypes/contract/workloads.schema.json and the Go reference (internal/config/workload.go).
    /// </summary>
    public static class Workloads
    {
        /// <summary>The smallest probe message: type, kind, player, seq, send time (CONTRACT.md §3.2).</summary>
        public const int ProbeHeaderBytes = 18;

        /// <summary>The largest stream/pingpong probe, as in the schema.</summary>
        public const int MaxMessageBytes = 1 << 20;

        /// <summary>Envirostick's world sizes (objects per size letter).</summary>
        public static readonly IDictionary<string, int> WorldSizes = new Dictionary<string, int>
        {
            { "S", 7500 },
            { "M", 17500 },
            { "L", 40000 },
        };

        private delegate void Apply(Workload w, string key, string value);

        private sealed class Param
        {
            public readonly string Default;
            public readonly Apply Apply;

            public Param(string def, Apply apply)
            {
                Default = def;
                Apply = apply;
            }
        }

        private static readonly Dictionary<string, SortedDictionary<string, Param>> Specs = BuildSpecs();

        /// <summary>Every workload name of the contract, sorted.</summary>
        public static string[] Names
        {
            get
            {
                var names = new List<string>(Specs.Keys);
                names.Sort(StringComparer.Ordinal);
                return names.ToArray();
            }
        }

        /// <summary>The parameter names of one workload, sorted; empty for an unknown workload.</summary>
        public static string[] ParameterNames(string workload)
        {
            SortedDictionary<string, Param> spec;
            if (!Specs.TryGetValue(workload, out spec))
            {
                return new string[0];
            }
            return new List<string>(spec.Keys).ToArray();
        }

        /// <summary>
        /// Validates a workload name and its -param pairs (transport options already removed) and fills in
        /// the defaults. Throws <see cref="UsageException"/> naming the flag or key and what was expected.
        /// </summary>
        public static Workload Resolve(string name, IDictionary<string, string> parameters)
        {
            SortedDictionary<string, Param> spec;
            if (name == null || !Specs.TryGetValue(name, out spec))
            {
                throw new UsageException(string.Format(
                    "-workload \"{0}\": expected one of {1}", name, string.Join(", ", Names)));
            }
            var given = parameters ?? new Dictionary<string, string>();
            foreach (var key in given.Keys)
            {
                if (!spec.ContainsKey(key))
                {
                    if (spec.Count == 0)
                    {
                        throw new UsageException(string.Format("-param {0}: workload {1} takes no parameters", key, name));
                    }
                    throw new UsageException(string.Format(
                        "-param {0}: unknown for workload {1} (expected one of {2})",
                        key, name, string.Join(", ", ParameterNames(name))));
                }
            }
            if (name == "world" && given.ContainsKey("size") && given.ContainsKey("objects"))
            {
                throw new UsageException("-param size and -param objects (workload world): give one, not both");
            }
            var w = new Workload { Name = name };
            // objects before size, so that a given size overrides the objects default.
            var keys = new List<string>(spec.Keys);
            if (name == "world")
            {
                keys.Remove("size");
                keys.Add("size");
            }
            foreach (var key in keys)
            {
                string value;
                if (!given.TryGetValue(key, out value))
                {
                    value = spec[key].Default;
                }
                spec[key].Apply(w, key, value);
                if (value.Length > 0)
                {
                    w.Params[key] = value;
                }
            }
            if (name == "world")
            {
                w.Params["objects"] = w.Objects.ToString(CultureInfo.InvariantCulture);
            }
            return w;
        }

        private static Dictionary<string, SortedDictionary<string, Param>> BuildSpecs()
        {
            var s = new Dictionary<string, SortedDictionary<string, Param>>(StringComparer.Ordinal);
            s["idle"] = Spec();
            s["active"] = Spec(
                "blocks", new Param("10", IntIn(1, 1000000, (w, v) => w.Blocks = v)),
                "interval", new Param("1.0", FloatIn(0, 3600, true, (w, v) => w.IntervalS = v)),
                "continuous", new Param("false", BoolParam((w, v) => w.Continuous = v)));
            s["wander"] = Spec(
                "speed", new Param("4.0", FloatIn(0, 1000, false, (w, v) => w.SpeedMps = v)),
                "area", new Param("64", FloatIn(0, 100000, true, (w, v) => w.AreaM = v)));
            s["world"] = Spec(
                "objects", new Param("7500", IntIn(0, 10000000, (w, v) => w.Objects = v)),
                "size", new Param("", WorldSize));
            s["envmod"] = Spec(
                "blocks", new Param("300", IntIn(1, 100000, (w, v) => w.Blocks = v)),
                "interval", new Param("0.4", FloatIn(0, 3600, true, (w, v) => w.IntervalS = v)),
                "interval_change", new Param("0.004", FloatIn(0, 3600, false, (w, v) => w.IntervalChangeS = v)));
            s["rpc-toggle"] = Spec(
                "interval", new Param("0.2", FloatIn(0, 3600, true, (w, v) => w.IntervalS = v)));
            s["stream"] = Spec(
                "size", new Param("400", IntIn(ProbeHeaderBytes, MaxMessageBytes, (w, v) => w.SizeBytes = v)),
                "rate", new Param("60", FloatIn(0, 1000, true, (w, v) => w.RateHz = v)),
                "channel", new Param("reliable", ChannelParam));
            s["pingpong"] = Spec(
                "count", new Param("1000", IntIn(1, 100000000, (w, v) => w.Count = v)),
                "size", new Param("100", IntIn(ProbeHeaderBytes, MaxMessageBytes, (w, v) => w.SizeBytes = v)),
                "channel", new Param("reliable", ChannelParam));
            return s;
        }

        private static SortedDictionary<string, Param> Spec(params object[] pairs)
        {
            var d = new SortedDictionary<string, Param>(StringComparer.Ordinal);
            for (int i = 0; i + 1 < pairs.Length; i += 2)
            {
                d[(string)pairs[i]] = (Param)pairs[i + 1];
            }
            return d;
        }

        /// <summary>Parses a decimal integer the way Go's strconv.Atoi does (optional sign, digits only).</summary>
        public static bool TryParseInt(string v, out int n)
        {
            return int.TryParse(v, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out n);
        }

        /// <summary>Parses a decimal number without surrounding spaces (Go's strconv.ParseFloat subset).</summary>
        public static bool TryParseDouble(string v, out double f)
        {
            const NumberStyles style = NumberStyles.AllowLeadingSign | NumberStyles.AllowDecimalPoint | NumberStyles.AllowExponent;
            return double.TryParse(v, style, CultureInfo.InvariantCulture, out f);
        }

        /// <summary>Parses a boolean as Go's strconv.ParseBool does (1/t/true/..., 0/f/false/...).</summary>
        public static bool TryParseBool(string v, out bool b)
        {
            switch (v)
            {
                case "1":
                case "t":
                case "T":
                case "true":
                case "TRUE":
                case "True":
                    b = true;
                    return true;
                case "0":
                case "f":
                case "F":
                case "false":
                case "FALSE":
                case "False":
                    b = false;
                    return true;
                default:
                    b = false;
                    return false;
            }
        }

        private static Apply IntIn(int lo, int hi, Action<Workload, int> store)
        {
            return (w, key, v) =>
            {
                int n;
                if (!TryParseInt(v, out n) || n < lo || n > hi)
                {
                    throw new UsageException(string.Format(CultureInfo.InvariantCulture,
                        "-param {0}={1} (workload {2}): expected an integer in [{3}, {4}]", key, v, w.Name, lo, hi));
                }
                store(w, n);
            };
        }

        private static Apply FloatIn(double lo, double hi, bool loOpen, Action<Workload, double> store)
        {
            return (w, key, v) =>
            {
                double f;
                bool ok = TryParseDouble(v, out f) && !double.IsNaN(f) && f <= hi && f >= lo && !(loOpen && f == lo);
                if (!ok)
                {
                    throw new UsageException(string.Format(CultureInfo.InvariantCulture,
                        "-param {0}={1} (workload {2}): expected a number in {3}{4}, {5}]",
                        key, v, w.Name, loOpen ? "(" : "[", Workload.Format(lo), Workload.Format(hi)));
                }
                store(w, f);
            };
        }

        private static Apply BoolParam(Action<Workload, bool> store)
        {
            return (w, key, v) =>
            {
                bool b;
                if (!TryParseBool(v, out b))
                {
                    throw new UsageException(string.Format(
                        "-param {0}={1} (workload {2}): expected true or false", key, v, w.Name));
                }
                store(w, b);
            };
        }

        private static void ChannelParam(Workload w, string key, string v)
        {
            switch (v)
            {
                case "reliable":
                    w.Channel = Channel.Reliable;
                    break;
                case "unreliable":
                    w.Channel = Channel.Unreliable;
                    break;
                default:
                    throw new UsageException(string.Format(
                        "-param {0}={1} (workload {2}): expected reliable or unreliable", key, v, w.Name));
            }
        }

        private static void WorldSize(Workload w, string key, string v)
        {
            if (v.Length == 0)
            {
                return;
            }
            int n;
            if (!WorldSizes.TryGetValue(v, out n))
            {
                throw new UsageException(string.Format("-param {0}={1} (workload world): expected S, M or L", key, v));
            }
            w.Objects = n;
        }
    }
}
