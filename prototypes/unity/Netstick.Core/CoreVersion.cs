namespace Netstick.Core
{
    /// <summary>
    /// The version of Netstick.Core, recorded by every host as <c>netstick-core</c> in meta.json's
    /// library_versions (and listed in its manifest): raise it whenever the core's behaviour changes.
    /// </summary>
    public static class CoreVersion
    {
        /// <summary>The library name in library_versions.</summary>
        public const string Name = "netstick-core";

        /// <summary>The version string.</summary>
        public const string Value = "1.0.0";
    }
}
