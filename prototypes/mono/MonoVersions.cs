using System;
using System.Collections.Generic;
using System.Reflection;
using Netstick.Core;

namespace Netstick.Mono
{
    /// <summary>
    /// library_versions of meta.json, read at run time (CONTRACT.md §3.1): the mono runtime that runs the
    /// process (Mono.Runtime.GetDisplayName, through reflection as mono documents it) and the core.
    /// </summary>
    internal static class MonoVersions
    {
        private static Dictionary<string, string> cached;

        public static IDictionary<string, string> Get()
        {
            if (cached == null)
            {
                cached = new Dictionary<string, string>
                {
                    { "mono", Runtime() },
                    { CoreVersion.Name, CoreVersion.Value },
                };
            }
            return cached;
        }

        /// <summary>The runtime's version number, e.g. "6.8.0.105" of "6.8.0.105 (Debian 6.8.0.105+dfsg-3.3 ...)".</summary>
        public static string Runtime()
        {
            Type t = Type.GetType("Mono.Runtime");
            if (t == null)
            {
                return "not mono: .NET " + Environment.Version;
            }
            MethodInfo m = t.GetMethod("GetDisplayName", BindingFlags.NonPublic | BindingFlags.Static);
            string display = m == null ? null : m.Invoke(null, null) as string;
            if (string.IsNullOrEmpty(display))
            {
                return "unknown";
            }
            int space = display.IndexOf(' ');
            return space > 0 ? display.Substring(0, space) : display;
        }
    }
}
