using System;
using System.Collections.Generic;
using System.Globalization;

namespace Netstick.Core
{
    /// <summary>
    /// One process's validated command line (CONTRACT.md §1), parsed as the reference does
    /// (prototypes/reference/internal/config): <c>-flag value</c>, <c>-flag=value</c>, <c>--flag</c>;
    /// unknown flags are an error; every flag of both roles is accepted and checked, and a flag of
    /// the other role is otherwise ignored.
    /// </summary>
    public sealed class Options
    {
        public string Role { get; set; }
        public string Host { get; set; }
        public int Port { get; set; }
        public string Transport { get; set; }
        public int Players { get; set; }
        public int FirstPlayer { get; set; }
        /// <summary>The workload's name (-workload).</summary>
        public string Workload { get; set; }
        /// <summary>The workload with every parameter parsed and filled in.</summary>
        public Workload ResolvedWorkload { get; set; }
        /// <summary>Every workload parameter with defaults filled in (meta.json <c>params</c>).</summary>
        public Dictionary<string, string> Params { get; set; }
        /// <summary>The <c>-param t.key=value</c> options, without the <c>t.</c> prefix.</summary>
        public Dictionary<string, string> TransportOptions { get; set; }
        public double DurationS { get; set; }
        public double TickRateHz { get; set; }
        public string LogDir { get; set; }
        public string RunId { get; set; }
        public ulong Seed { get; set; }
        public double ProbeHz { get; set; }
        public double ConnectIntervalMs { get; set; }
        public int ConnectParallel { get; set; }
        public double ConnectTimeoutS { get; set; }
        public double SendSlackUs { get; set; }
        /// <summary>The prototype's own flags of <see cref="OptionsSpec.ExtraFlags"/>, defaults filled in.</summary>
        public Dictionary<string, string> Extra { get; set; }
        /// <summary>The command line as received, argv[0] first (meta.json <c>args</c>).</summary>
        public string[] Args { get; set; }

        /// <summary><c>server</c> or <c>client-&lt;first-player&gt;</c>: the log files' prefix (CONTRACT.md §3).</summary>
        public string Proc
        {
            get { return Role == "client" ? "client-" + FirstPlayer.ToString(CultureInfo.InvariantCulture) : "server"; }
        }

        /// <summary>host:port.</summary>
        public string Addr
        {
            get { return Host + ":" + Port.ToString(CultureInfo.InvariantCulture); }
        }

        // The contract's value-taking flags (CONTRACT.md §1), without the dash.
        private static readonly string[] ContractFlags =
        {
            "role", "host", "port", "transport", "players", "first-player", "workload", "param",
            "duration", "tick-rate", "log-dir", "run-id", "seed",
        };

        /// <summary>
        /// Parses argv (argv[0] the program, as Environment.GetCommandLineArgs() returns it) against
        /// spec. Throws <see cref="UsageException"/> (exit 2) naming the flag or key and what was
        /// expected.
        /// </summary>
        public static Options Parse(string[] argv, OptionsSpec spec)
        {
            if (argv == null || argv.Length == 0)
            {
                throw new ArgumentException("argv must hold the program (argv[0]) first", "argv");
            }
            var known = new HashSet<string>(ContractFlags);
            foreach (string f in spec.OptionalFlags)
            {
                known.Add(f);
            }
            foreach (string f in spec.ExtraFlags.Keys)
            {
                known.Add(f);
            }
            var values = new Dictionary<string, string>();
            var rawParams = new List<string>();

            int i = 1;
            for (; i < argv.Length; i++)
            {
                string a = argv[i];
                if (a.Length < 2 || a[0] != '-')
                {
                    throw new UsageException("unexpected argument \"" + a + "\" (flags are -name value)");
                }
                int dashes = a[1] == '-' ? 2 : 1;
                if (dashes == 2 && a.Length == 2)
                {
                    // "--" ends the flags, as in Go's flag package; nothing may follow.
                    if (i + 1 < argv.Length)
                    {
                        throw new UsageException("unexpected argument \"" + argv[i + 1] + "\" (flags are -name value)");
                    }
                    break;
                }
                string name = a.Substring(dashes);
                if (name.Length == 0 || name[0] == '-' || name[0] == '=')
                {
                    throw new UsageException("bad flag syntax: " + a + " (expected -name value or -name=value)");
                }
                string value = null;
                int eq = name.IndexOf('=');
                if (eq >= 0)
                {
                    value = name.Substring(eq + 1);
                    name = name.Substring(0, eq);
                }
                bool hostTakesValue;
                if (!known.Contains(name) && spec.HostFlags.TryGetValue(name, out hostTakesValue))
                {
                    if (hostTakesValue && value == null && i + 1 < argv.Length)
                    {
                        i++;
                    }
                    continue;
                }
                if (!known.Contains(name))
                {
                    throw new UsageException("flag provided but not defined: -" + name
                        + " (expected one of " + ListFlags(known) + ")");
                }
                if (value == null)
                {
                    if (i + 1 >= argv.Length)
                    {
                        throw new UsageException("flag needs an argument: -" + name);
                    }
                    value = argv[++i];
                }
                if (name == "param")
                {
                    rawParams.Add(value);
                }
                else
                {
                    values[name] = value; // the last one wins, as in Go's flag package
                }
            }

            var o = new Options();
            o.Args = (string[])argv.Clone();
            o.Role = Get(values, "role", "");
            o.Host = Get(values, "host", "127.0.0.1");
            o.Transport = Get(values, "transport", spec.DefaultTransport ?? "");
            o.LogDir = Get(values, "log-dir", "");
            o.RunId = Get(values, "run-id", "local");
            string workload = Get(values, "workload", "idle");

            if (o.Role == "")
            {
                throw new UsageException("-role is required (expected server or client)");
            }
            if (o.Role != "server" && o.Role != "client")
            {
                throw new UsageException("-role \"" + o.Role + "\": expected server or client");
            }
            if (o.LogDir == "")
            {
                throw new UsageException("-log-dir is required");
            }
            o.Port = (int)Integer(values, "port", 7777, 1, 65535, "an integer in 1..65535");
            if (o.Host == "")
            {
                throw new UsageException("-host is empty: expected an address");
            }
            o.Players = (int)Integer(values, "players", 1, 1, 100000, "an integer in 1..100000");
            o.FirstPlayer = (int)Integer(values, "first-player", 0, 0, (long)uint.MaxValue - o.Players,
                "a non-negative id");
            o.DurationS = Number(values, "duration", 0, 0, false, 7 * 24 * 3600, "seconds >= 0");
            o.TickRateHz = Number(values, "tick-rate", 60, 0, true, 1000, "Hz in (0, 1000]");
            string seed = Get(values, "seed", "1");
            ulong seedValue;
            if (!ulong.TryParse(seed, NumberStyles.None, CultureInfo.InvariantCulture, out seedValue))
            {
                throw new UsageException("-seed \"" + seed + "\": expected an unsigned integer");
            }
            o.Seed = seedValue;
            o.ProbeHz = Number(values, "probe-hz", 10, 0, false, 1000, "Hz in [0, 1000]");
            o.ConnectIntervalMs = Number(values, "connect-interval-ms", 2, 0, false, 60000, "ms in [0, 60000]");
            o.ConnectParallel = (int)Integer(values, "connect-parallel", 16, 1, int.MaxValue, "an integer >= 1");
            o.ConnectTimeoutS = Number(values, "connect-timeout-s", 10, 0, true, 3600, "seconds in (0, 3600]");
            o.SendSlackUs = Number(values, "send-slack-us", 100, 0, false, 100000, "µs in [0, 100000]");

            if (spec.Transports.Count > 0 && !spec.Transports.Contains(o.Transport))
            {
                throw new UsageException("-transport \"" + o.Transport + "\": expected one of "
                    + string.Join(", ", spec.Transports.ToArray()));
            }

            o.Extra = new Dictionary<string, string>(spec.ExtraFlags);
            foreach (string name in spec.ExtraFlags.Keys)
            {
                string v;
                if (values.TryGetValue(name, out v))
                {
                    o.Extra[name] = v;
                }
            }

            var given = new Dictionary<string, string>();
            o.TransportOptions = new Dictionary<string, string>();
            foreach (string p in rawParams)
            {
                int eq = p.IndexOf('=');
                if (eq <= 0)
                {
                    throw new UsageException("-param \"" + p + "\": expected key=value");
                }
                string key = p.Substring(0, eq);
                string value = p.Substring(eq + 1);
                if (key.StartsWith("t.", StringComparison.Ordinal))
                {
                    o.TransportOptions[key.Substring(2)] = value;
                    continue;
                }
                if (given.ContainsKey(key))
                {
                    throw new UsageException("-param " + key + " given twice");
                }
                given[key] = value;
            }
            o.ResolvedWorkload = spec.Resolve(workload, given);
            o.Workload = o.ResolvedWorkload.Name;
            o.Params = new Dictionary<string, string>(o.ResolvedWorkload.Params);
            return o;
        }

        private static string Get(Dictionary<string, string> values, string name, string def)
        {
            string v;
            return values.TryGetValue(name, out v) ? v : def;
        }

        private static long Integer(Dictionary<string, string> values, string name, long def, long lo, long hi,
            string expected)
        {
            string s;
            if (!values.TryGetValue(name, out s))
            {
                return def;
            }
            long n;
            if (!long.TryParse(s, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out n) || n < lo || n > hi)
            {
                throw new UsageException("-" + name + " \"" + s + "\": expected " + expected);
            }
            return n;
        }

        private static double Number(Dictionary<string, string> values, string name, double def, double lo,
            bool loOpen, double hi, string expected)
        {
            string s;
            if (!values.TryGetValue(name, out s))
            {
                return def;
            }
            double f;
            const NumberStyles style = NumberStyles.AllowLeadingSign | NumberStyles.AllowDecimalPoint
                | NumberStyles.AllowExponent;
            bool ok = double.TryParse(s, style, CultureInfo.InvariantCulture, out f);
            // !(f >= lo) also refuses NaN.
            if (!ok || !(f >= lo) || (loOpen && f == lo) || f > hi)
            {
                throw new UsageException("-" + name + " \"" + s + "\": expected " + expected);
            }
            return f;
        }

        private static string ListFlags(HashSet<string> known)
        {
            var names = new List<string>(known);
            names.Sort(StringComparer.Ordinal);
            for (int i = 0; i < names.Count; i++)
            {
                names[i] = "-" + names[i];
            }
            return string.Join(", ", names.ToArray());
        }
    }
}
