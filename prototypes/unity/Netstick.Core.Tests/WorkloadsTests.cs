using System.Collections.Generic;
using NUnit.Framework;

namespace Netstick.Core.Tests
{
    [TestFixture]
    public class WorkloadsTests
    {
        private static Dictionary<string, string> P(params string[] kv)
        {
            var d = new Dictionary<string, string>();
            foreach (string s in kv)
            {
                int eq = s.IndexOf('=');
                d[s.Substring(0, eq)] = s.Substring(eq + 1);
            }
            return d;
        }

        private static string Refused(string name, params string[] kv)
        {
            return Assert.Throws<UsageException>(() => Workloads.Resolve(name, P(kv))).Message;
        }

        [Test]
        public void EveryContractWorkloadIsKnown()
        {
            CollectionAssert.AreEqual(
                new[] { "active", "envmod", "idle", "pingpong", "rpc-toggle", "stream", "wander", "world" },
                Workloads.Names);
        }

        [Test]
        public void DefaultsAreFilledInAndRecordedAsGiven()
        {
            Workload a = Workloads.Resolve("active", P());
            Assert.AreEqual(10, a.Blocks);
            Assert.AreEqual(1.0, a.IntervalS);
            Assert.IsFalse(a.Continuous);
            CollectionAssert.AreEquivalent(P("blocks=10", "interval=1.0", "continuous=false"), a.Params);

            Workload s = Workloads.Resolve("stream", P("channel=unreliable"));
            Assert.AreEqual(400, s.SizeBytes);
            Assert.AreEqual(60.0, s.RateHz);
            Assert.AreEqual(Channel.Unreliable, s.Channel);
            Assert.AreEqual("unreliable", s.Params["channel"]);

            Workload pp = Workloads.Resolve("pingpong", P());
            Assert.AreEqual(1000, pp.Count);
            Assert.AreEqual(100, pp.SizeBytes);
            Assert.AreEqual(Channel.Reliable, pp.Channel);

            Workload e = Workloads.Resolve("envmod", P("interval_change=0"));
            Assert.AreEqual(300, e.Blocks);
            Assert.AreEqual(0.4, e.IntervalS);
            Assert.AreEqual(0.0, e.IntervalChangeS);

            Assert.AreEqual(0, Workloads.Resolve("idle", null).Params.Count);
        }

        [Test]
        public void WorldSizeOverridesTheObjectsDefault()
        {
            Workload w = Workloads.Resolve("world", P("size=M"));
            Assert.AreEqual(17500, w.Objects);
            Assert.AreEqual("17500", w.Params["objects"]);
            Assert.AreEqual("M", w.Params["size"]);
            Assert.AreEqual(7500, Workloads.Resolve("world", P()).Objects);
            Assert.AreEqual(12, Workloads.Resolve("world", P("objects=12")).Objects);
            StringAssert.Contains("give one, not both", Refused("world", "size=S", "objects=3"));
            StringAssert.Contains("expected S, M or L", Refused("world", "size=XL"));
        }

        [Test]
        public void UnknownNamesAndParametersAreRefusedByName()
        {
            StringAssert.Contains("-workload \"dance\": expected one of active,", Refused("dance"));
            StringAssert.Contains("-param rate: workload idle takes no parameters", Refused("idle", "rate=1"));
            StringAssert.Contains("-param rate: unknown for workload active (expected one of blocks, continuous, interval)",
                Refused("active", "rate=1"));
        }

        [Test]
        public void ValuesOutsideTheirRangeAreRefused()
        {
            StringAssert.Contains("-param size=17 (workload stream): expected an integer in [18, 1048576]",
                Refused("stream", "size=17"));
            StringAssert.Contains("[18, 1048576]", Refused("pingpong", "size=1048577"));
            StringAssert.Contains("expected a number in (0, 3600]", Refused("active", "interval=0"));
            StringAssert.Contains("expected a number in (0, 3600]", Refused("rpc-toggle", "interval=3600.5"));
            StringAssert.Contains("expected a number in [0, 1000]", Refused("wander", "speed=-1"));
            StringAssert.Contains("expected a number in (0, 100000]", Refused("wander", "area=NaN"));
            StringAssert.Contains("expected an integer in [1, 100000]", Refused("envmod", "blocks=0"));
            StringAssert.Contains("expected an integer", Refused("active", "blocks=1.5"));
            StringAssert.Contains("expected an integer", Refused("active", "blocks= 5"));
            StringAssert.Contains("expected true or false", Refused("active", "continuous=yes"));
            StringAssert.Contains("expected reliable or unreliable", Refused("stream", "channel=ordered"));
            Assert.AreEqual(18, Workloads.Resolve("stream", P("size=18")).SizeBytes);
            Assert.AreEqual(0.0, Workloads.Resolve("wander", P("speed=0")).SpeedMps);
            Assert.AreEqual(1e-3, Workloads.Resolve("rpc-toggle", P("interval=1e-3")).IntervalS);
        }

        [Test]
        public void BooleansAcceptGosForms()
        {
            foreach (string t in new[] { "1", "t", "T", "true", "TRUE", "True" })
            {
                Assert.IsTrue(Workloads.Resolve("active", P("continuous=" + t)).Continuous, t);
            }
            foreach (string f in new[] { "0", "f", "F", "false", "FALSE", "False" })
            {
                Assert.IsFalse(Workloads.Resolve("active", P("continuous=" + f)).Continuous, f);
            }
        }

        [Test]
        public void OptionsParseResolvesThroughWorkloads()
        {
            Options o = Options.Parse(new[] { "x", "-role", "client", "-log-dir", "d", "-workload", "stream",
                "-param", "size=64", "-param", "t.sockbuf=0" }, new OptionsSpec("mono", "tcp", "tcp", "udp"));
            Assert.AreEqual(64, o.ResolvedWorkload.SizeBytes);
            Assert.AreEqual("0", o.TransportOptions["sockbuf"]);
            Assert.AreEqual("64", o.Params["size"]);
        }
    }
}
