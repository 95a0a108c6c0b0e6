using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using UnityEditor;
using UnityEditor.Build;
using UnityEditor.Build.Reporting;
using UnityEditor.PackageManager;
using UnityEditor.SceneManagement;
using UnityEngine;

namespace Netstick.Editor
{
    /// <summary>
    /// The build of a Netstick Unity player, run by GameCI as its buildMethod
    /// (<c>Netstick.Editor.Build.Server</c>, <c>.Client</c>, or <c>.FromCommandLine</c> reading
    /// <c>-netstickRole server|client</c>). It generates the only scene from code (an empty scene
    /// holding the project's NetstickHost component; nothing is hand-edited), records the
    /// versions of the packages and vendored libraries compiled in (read by the player at run
    /// time for meta.json), and builds StandaloneLinux64: the Dedicated Server subtarget for the
    /// server, a normal player (run with -batchmode -nographics) for clients, at
    /// <c>-customBuildPath</c>. Exits 0 on success and 1 on any failure, naming it.
    /// The scene is made here rather than in an InitializeOnLoad hook, which GameCI warns
    /// about: assets created while the editor loads can leave a build without them.
    /// </summary>
    public static class Build
    {
        private const string GeneratedDir = "Assets/Netstick/Generated";
        private const string ScenePath = GeneratedDir + "/Netstick.unity";
        private const string InfoPath = GeneratedDir + "/Resources/netstick-build.txt";
        private const string HostTypeName = "Netstick.Unity.NetstickHost";

        // Libraries copied into Assets rather than resolved as packages: name, version file.
        private static readonly string[][] Vendored =
        {
            new[] { "mirror", "Assets/Mirror/Version.txt" },
            new[] { "kcp2k", "Assets/Mirror/Transports/KCP/kcp2k/VERSION.txt" },
            new[] { "telepathy", "Assets/Mirror/Transports/Telepathy/Telepathy/VERSION" },
        };

        public static void Server()
        {
            Run("server");
        }

        public static void Client()
        {
            Run("client");
        }

        public static void FromCommandLine()
        {
            Run(Arg("-netstickRole"));
        }

        private static void Run(string role)
        {
            int code;
            try
            {
                code = BuildPlayer(role);
            }
            catch (Exception e)
            {
                Debug.LogError("netstick build (" + role + "): " + e);
                code = 1;
            }
            EditorApplication.Exit(code);
        }

        private static int BuildPlayer(string role)
        {
            if (role != "server" && role != "client")
            {
                throw new ArgumentException("-netstickRole \"" + role + "\": expected server or client");
            }
            string output = Arg("-customBuildPath");
            if (string.IsNullOrEmpty(output))
            {
                throw new ArgumentException("-customBuildPath: expected the player's path, e.g. build/StandaloneLinux64/netstick-mirror");
            }
            Type host = FindHostType();
            Directory.CreateDirectory(Path.GetDirectoryName(InfoPath));
            File.WriteAllText(InfoPath, BuildInfoText());
            AssetDatabase.ImportAsset(InfoPath, ImportAssetOptions.ForceSynchronousImport);
            GenerateScene(host);

            bool server = role == "server";
            string program = Path.GetFileNameWithoutExtension(output);
            PlayerSettings.productName = program;
            PlayerSettings.companyName = "netstick";
            PlayerSettings.runInBackground = true;
            ScriptingImplementation backend = Arg("-netstickBackend") == "il2cpp"
                ? ScriptingImplementation.IL2CPP
                : ScriptingImplementation.Mono2x;
            PlayerSettings.SetScriptingBackend(NamedBuildTarget.Standalone, backend);
            PlayerSettings.SetScriptingBackend(NamedBuildTarget.Server, backend);
            EditorUserBuildSettings.standaloneBuildSubtarget = server
                ? StandaloneBuildSubtarget.Server
                : StandaloneBuildSubtarget.Player;

            var options = new BuildPlayerOptions
            {
                scenes = new[] { ScenePath },
                locationPathName = output,
                target = BuildTarget.StandaloneLinux64,
                targetGroup = BuildTargetGroup.Standalone,
                subtarget = (int)(server ? StandaloneBuildSubtarget.Server : StandaloneBuildSubtarget.Player),
                options = BuildOptions.None,
            };
            BuildReport report = BuildPipeline.BuildPlayer(options);
            Debug.Log("netstick build (" + role + "): " + report.summary.result + ", " + report.summary.totalErrors
                + " error(s), " + report.summary.outputPath);
            return report.summary.result == BuildResult.Succeeded ? 0 : 1;
        }

        /// <summary>The project's one concrete NetstickHost (its library's bootstrap).</summary>
        private static Type FindHostType()
        {
            Type baseType = AppDomain.CurrentDomain.GetAssemblies()
                .Select(a => a.GetType(HostTypeName, false))
                .FirstOrDefault(t => t != null);
            if (baseType == null)
            {
                throw new InvalidOperationException(HostTypeName + " not found: the runtime assembly did not compile");
            }
            List<Type> hosts = TypeCache.GetTypesDerivedFrom(baseType).Where(t => !t.IsAbstract).ToList();
            if (hosts.Count != 1)
            {
                throw new InvalidOperationException("expected exactly one bootstrap deriving from " + HostTypeName
                    + ", found " + hosts.Count + ": " + string.Join(", ", hosts.Select(t => t.FullName)));
            }
            return hosts[0];
        }

        private static void GenerateScene(Type host)
        {
            Directory.CreateDirectory(GeneratedDir);
            var scene = EditorSceneManager.NewScene(NewSceneSetup.EmptyScene, NewSceneMode.Single);
            new GameObject("Netstick").AddComponent(host);
            if (!EditorSceneManager.SaveScene(scene, ScenePath))
            {
                throw new IOException("cannot save the generated scene " + ScenePath);
            }
            EditorBuildSettings.scenes = new[] { new EditorBuildSettingsScene(ScenePath, true) };
        }

        /// <summary>name=version lines: every package of the project that is not a built-in module, and the vendored libraries.</summary>
        private static string BuildInfoText()
        {
            var lines = new SortedDictionary<string, string>(StringComparer.Ordinal);
            foreach (UnityEditor.PackageManager.PackageInfo p in UnityEditor.PackageManager.PackageInfo.GetAllRegisteredPackages())
            {
                if (p.source != PackageSource.BuiltIn)
                {
                    lines[p.name] = p.version;
                }
            }
            foreach (string[] lib in Vendored)
            {
                if (!File.Exists(lib[1]))
                {
                    if (Directory.Exists(Path.GetDirectoryName(lib[1])) && lib[0] == "mirror")
                    {
                        throw new FileNotFoundException(lib[1] + " is missing: write the Mirror tag's version into it when copying Assets/Mirror (e.g. 96.11.0)");
                    }
                    continue;
                }
                string first = File.ReadAllLines(lib[1]).Select(l => l.Trim()).FirstOrDefault(l => l.Length > 0) ?? "";
                string version = first.Split(' ')[0].TrimStart('v', 'V');
                if (version.Length == 0)
                {
                    throw new InvalidDataException(lib[1] + ": expected a version on its first line");
                }
                lines[lib[0]] = version;
            }
            return string.Join("\n", lines.Select(kv => kv.Key + "=" + kv.Value)) + "\n";
        }

        private static string Arg(string name)
        {
            string[] args = Environment.GetCommandLineArgs();
            for (int i = 0; i + 1 < args.Length; i++)
            {
                if (args[i] == name)
                {
                    return args[i + 1];
                }
            }
            return null;
        }
    }
}
