namespace Netstick.Unity.MirrorLib
{
    /// <summary>The component the build puts into the generated scene: the shared host with Mirror's adapter.</summary>
    public sealed class MirrorBootstrap : NetstickHost
    {
        protected override ILibraryAdapter CreateAdapter()
        {
            return new MirrorAdapter(gameObject);
        }
    }
}
