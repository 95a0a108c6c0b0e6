using System;
using System.IO;

namespace Netstick.Core.Tests
{
    /// <summary>Temporary directories and the repository's own files, for the tests.</summary>
    internal static class TestFiles
    {
        /// <summary>A new empty directory under the system's temporary directory.</summary>
        public static string TempDir()
        {
            string dir = Path.Combine(Path.GetTempPath(), "netstick-core-test-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(dir);
            return dir;
        }

        /// <summary>
        /// A file of the repository, found by walking up from the test assembly (bin/ lies inside
        /// prototypes/unity), e.g. <c>prototypes/contract/wire-golden.json</c>.
        /// </summary>
        public static string Repo(string relative)
        {
            string dir = Path.GetDirectoryName(typeof(TestFiles).Assembly.Location);
            while (dir != null)
            {
                string candidate = Path.Combine(dir, relative);
                if (File.Exists(candidate))
                {
                    return candidate;
                }
                dir = Path.GetDirectoryName(dir);
            }
            throw new FileNotFoundException("not found above the test assembly: " + relative);
        }
    }
}
