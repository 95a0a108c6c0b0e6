namespace Netstick.Unity.Ngo
{
    /// <summary>The component the build puts into the generated scene: the shared host with NGO's adapter.</summary>
    public sealed class NgoBootstrap : NetstickHost
    {
        protected override ILibraryAdapter CreateAdapter()
        {
            return new NgoAdapter();
        }
    }
}
