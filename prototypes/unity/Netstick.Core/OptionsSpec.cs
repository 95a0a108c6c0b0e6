using System;
using System.Collections.Generic;

namespace Netstick.Core
{
    /// <summary>
    /// Resolves a workload: checks its name and the given parameters (CONTRACT.md §5) and returns it
    /// with every parameter filled in (<see cref="Workload.Params"/>, as meta.json records them).
    /// Throws <see cref="UsageException"/> naming the workload or the key and what was expected.
    /// </summary>
    public delegate Workload WorkloadResolver(string workload, IDictionary<string, string> given);

    /// <summary>
    /// What a prototype adds to the contract's command line (CONTRACT.md §1): its name, its
    /// transports, which optional flags it implements, its own flags and the host's flags to skip.
    /// </summary>
    public sealed class OptionsSpec
    {
        /// <summary>The optional flags of CONTRACT.md §1 (without the dash).</summary>
        public static readonly string[] AllOptionalFlags =
        {
            "probe-hz", "connect-interval-ms", "connect-parallel", "connect-timeout-s", "send-slack-us",
        };

        public OptionsSpec(string prototype, string defaultTransport, params string[] transports)
        {
            Prototype = prototype;
            DefaultTransport = defaultTransport;
            Transports = new List<string>(transports);
            if (Transports.Count == 0 && !string.IsNullOrEmpty(defaultTransport))
            {
                Transports.Add(defaultTransport);
            }
            OptionalFlags = new HashSet<string>(AllOptionalFlags);
            ExtraFlags = new Dictionary<string, string>();
            HostFlags = new Dictionary<string, bool>();
        }

        /// <summary>The prototype's name as meta.json records it (e.g. <c>mono</c>, <c>mirror</c>).</summary>
        public string Prototype { get; set; }

        /// <summary>The transport used when -transport is absent.</summary>
        public string DefaultTransport { get; set; }

        /// <summary>The names -transport accepts; anything else is exit 2.</summary>
        public List<string> Transports { get; private set; }

        /// <summary>
        /// The optional flags this prototype implements (all of them unless removed). One it lacks is
        /// an unknown flag (exit 2): the manifest says the prototype uses its own fixed behaviour.
        /// </summary>
        public HashSet<string> OptionalFlags { get; private set; }

        /// <summary>
        /// The prototype's own value-taking flags (without the dash) and their defaults, e.g. Unity's
        /// <c>target-frame-rate</c>; their values land in <see cref="Options.Extra"/> unvalidated.
        /// </summary>
        public Dictionary<string, string> ExtraFlags { get; private set; }

        /// <summary>
        /// Flags of the host to skip (without the dash) → whether they take a value, e.g. Unity's
        /// <c>batchmode</c> (false), <c>nographics</c> (false), <c>logFile</c> (true).
        /// </summary>
        public Dictionary<string, bool> HostFlags { get; private set; }

        /// <summary>
        /// The workloads of CONTRACT.md §5 this prototype implements; null: all of
        /// <see cref="Workloads.Names"/>. Any other is refused like an unknown one (exit 2,
        /// CONTRACT.md §2), never run as another.
        /// </summary>
        public HashSet<string> ImplementedWorkloads { get; set; }

        /// <summary>
        /// Checks -workload and its -param keys and fills in defaults; null: <see cref="Workloads.Resolve"/>.
        /// Called only for a workload of <see cref="ImplementedWorkloads"/>.
        /// </summary>
        public WorkloadResolver ResolveWorkload { get; set; }

        /// <summary>Resolves -workload and its parameters as this spec says (see <see cref="ResolveWorkload"/>).</summary>
        public Workload Resolve(string workload, IDictionary<string, string> given)
        {
            if (ImplementedWorkloads != null && !ImplementedWorkloads.Contains(workload))
            {
                var names = new List<string>(ImplementedWorkloads);
                names.Sort(StringComparer.Ordinal);
                throw new UsageException("-workload \"" + workload + "\": expected one of "
                    + string.Join(", ", names.ToArray()) + " (the workloads " + Prototype + " implements)");
            }
            WorkloadResolver resolve = ResolveWorkload ?? Workloads.Resolve;
            return resolve(workload, given);
        }
    }
}
