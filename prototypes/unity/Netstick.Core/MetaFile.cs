using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Text;

namespace Netstick.Core
{
    /// <summary>
    /// <c>&lt;proc&gt;.meta.json</c> (CONTRACT.md §3.1): written at start with <c>"status": "running"</c> and
    /// rewritten at exit, each time atomically (a temporary file renamed over it), so a reader never
    /// sees half a file. Keys are written in sorted order, as the reference writes them.
    /// </summary>
    public sealed class MetaFile
    {
        private readonly SortedDictionary<string, object> values = new SortedDictionary<string, object>(StringComparer.Ordinal);

        public MetaFile(string path)
        {
            Path = path;
        }

        /// <summary>The file written.</summary>
        public string Path { get; private set; }

        /// <summary>The keys and values of the file; add keys before <see cref="WriteStart"/> or <see cref="WriteExit"/>.</summary>
        public IDictionary<string, object> Values
        {
            get { return values; }
        }

        /// <summary><c>&lt;proc&gt;.meta.json</c> in logDir.</summary>
        public static MetaFile Create(string logDir, string proc)
        {
            return new MetaFile(System.IO.Path.Combine(logDir, proc + ".meta.json"));
        }

        /// <summary>
        /// Writes the start state: every key of §3.1 from o, the prototype's name, the library
        /// versions and effective channels the transport reports, plus the extra keys given. Creates
        /// the log directory first if it is missing (<see cref="LineLog.EnsureDirectory"/>).
        /// </summary>
        public void WriteStart(Options o, string prototype, IDictionary<string, string> libraryVersions,
            IDictionary<string, string> effectiveChannels, IDictionary<string, object> extra = null)
        {
            LineLog.EnsureDirectory(System.IO.Path.GetDirectoryName(System.IO.Path.GetFullPath(Path)));
            values["schema"] = Lines.SchemaVersion;
            values["role"] = o.Role;
            values["proc"] = o.Proc;
            values["prototype"] = prototype;
            values["transport"] = o.Transport;
            values["library_versions"] = Sorted(libraryVersions);
            values["args"] = o.Args ?? new string[0];
            values["workload"] = o.Workload;
            values["params"] = Sorted(o.Params);
            values["transport_options"] = Sorted(o.TransportOptions);
            values["effective_channels"] = Sorted(effectiveChannels);
            values["run_id"] = o.RunId;
            values["seed"] = o.Seed;
            values["players"] = o.Players;
            values["first_player"] = o.FirstPlayer;
            values["tick_rate_hz"] = o.TickRateHz;
            values["probe_hz"] = o.ProbeHz;
            values["send_slack_us"] = o.SendSlackUs;
            values["duration_s"] = o.DurationS;
            values["pid"] = Process.GetCurrentProcess().Id;
            values["host"] = HostName();
            values["start_unix_ns"] = Clock.WallNs();
            values["status"] = "running";
            if (extra != null)
            {
                foreach (var kv in extra)
                {
                    values[kv.Key] = kv.Value;
                }
            }
            Write();
        }

        /// <summary>Rewrites the file at exit with end_unix_ns, exit_code, exit_reason and <c>"status": "exited"</c>.</summary>
        public void WriteExit(int exitCode, string reason)
        {
            values["end_unix_ns"] = Clock.WallNs();
            values["exit_code"] = exitCode;
            values["exit_reason"] = reason ?? "";
            values["status"] = "exited";
            Write();
        }

        /// <summary>Writes <see cref="Values"/> atomically; throws <see cref="LogDirException"/> (exit 6) on failure.</summary>
        public void Write()
        {
            string dir = System.IO.Path.GetDirectoryName(System.IO.Path.GetFullPath(Path));
            string tmp = System.IO.Path.Combine(dir, "." + System.IO.Path.GetFileName(Path) + ".tmp"
                + Process.GetCurrentProcess().Id.ToString(System.Globalization.CultureInfo.InvariantCulture));
            try
            {
                File.WriteAllText(tmp, Json.Serialize(values, true) + "\n", new UTF8Encoding(false));
                if (File.Exists(Path))
                {
                    // rename(2) over the old file: readers see the old or the new, never half.
                    File.Replace(tmp, Path, null);
                }
                else
                {
                    File.Move(tmp, Path);
                }
            }
            catch (Exception e)
            {
                if (!(e is IOException || e is UnauthorizedAccessException || e is NotSupportedException))
                {
                    throw;
                }
                try
                {
                    File.Delete(tmp);
                }
                catch (Exception)
                {
                    // the write error below is what matters
                }
                throw new LogDirException("write " + Path + ": " + e.Message, e);
            }
        }

        /// <summary>The machine's name (gethostname), not the -host address (CONTRACT.md §3.1 <c>host</c>).</summary>
        public static string HostName()
        {
            try
            {
                return System.Net.Dns.GetHostName();
            }
            catch (Exception)
            {
                return Environment.MachineName;
            }
        }

        private static SortedDictionary<string, string> Sorted(IDictionary<string, string> d)
        {
            var s = new SortedDictionary<string, string>(StringComparer.Ordinal);
            if (d != null)
            {
                foreach (var kv in d)
                {
                    s[kv.Key] = kv.Value;
                }
            }
            return s;
        }
    }
}
