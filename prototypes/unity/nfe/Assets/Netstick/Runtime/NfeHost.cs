namespace Netstick.Unity.Nfe
{
    /// <summary>The component the build puts into the generated scene: the shared host with NFE's adapter.</summary>
    public sealed class NfeHost : NetstickHost
    {
        protected override ILibraryAdapter CreateAdapter()
        {
            return new NfeAdapter();
        }
    }
}
