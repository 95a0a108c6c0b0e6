namespace Netstick.Unity.FishNetLib
{
    /// <summary>The component the build puts into the generated scene: the shared host with FishNet's adapter.</summary>
    public sealed class FishNetBootstrap : NetstickHost
    {
        protected override ILibraryAdapter CreateAdapter()
        {
            return new FishNetAdapter();
        }
    }
}
