using System;
using System.Collections.Generic;
using Netstick.Core;
using UnityEngine;

namespace Netstick.Unity
{
    /// <summary>
    /// The versions this player was built with, for meta.json's library_versions: the editor from
    /// Application.unityVersion at run time, the packages and vendored libraries as the build
    /// (Netstick.Editor.Build) read them from the project and stored them in the player's
    /// resources, one <c>name=version</c> per line: what was compiled in, not the manifest's wish.
    /// </summary>
    public static class BuildInfo
    {
        public const string ResourceName = "netstick-build";

        private static Dictionary<string, string> cached;

        /// <summary>Every recorded name and version plus <c>unity</c> and <c>netstick-core</c>.</summary>
        public static IDictionary<string, string> LibraryVersions()
        {
            if (cached == null)
            {
                var versions = new Dictionary<string, string>(StringComparer.Ordinal);
                var asset = Resources.Load<TextAsset>(ResourceName);
                if (asset != null)
                {
                    foreach (string raw in asset.text.Split('\n'))
                    {
                        string line = raw.Trim();
                        int eq = line.IndexOf('=');
                        if (line.Length == 0 || line[0] == '#' || eq <= 0)
                        {
                            continue;
                        }
                        versions[line.Substring(0, eq)] = line.Substring(eq + 1);
                    }
                }
                versions["unity"] = Application.unityVersion;
                // The core compiled into this player, as the mono prototype reports it.
                versions[CoreVersion.Name] = CoreVersion.Value;
                cached = versions;
            }
            return new Dictionary<string, string>(cached, StringComparer.Ordinal);
        }

        /// <summary>The recorded version of one package or library; "unknown" when the build had none.</summary>
        public static string Version(string name)
        {
            string v;
            return LibraryVersions().TryGetValue(name, out v) ? v : "unknown";
        }
    }
}
