using System;
using System.Collections.Generic;
using NUnit.Framework;

namespace Netstick.Core.Tests
{
    [TestFixture]
    public class OptionsTests
    {
        private static OptionsSpec Spec()
        {
            return new OptionsSpec("mono", "udp", "udp", "tcp");
        }

        private static string[] Argv(string args)
        {
            var list = new List<string> { "netstick-mono" };
            list.AddRange(args.Split(new[] { ' ' }, StringSplitOptions.RemoveEmptyEntries));
            return list.ToArray();
        }

        private static Options Parse(string args)
        {
            return Options.Parse(Argv(args), Spec());
        }

        private static UsageException Refused(string args, OptionsSpec spec = null)
        {
            return Assert.Throws<UsageException>(() => Options.Parse(Argv(args), spec ?? Spec()), args);
        }

        [Test]
        public void DefaultsAreTheContracts()
        {
            Options o = Parse("-role server -log-dir x");
            Assert.AreEqual("server", o.Role);
            Assert.AreEqual("127.0.0.1", o.Host);
            Assert.AreEqual(7777, o.Port);
            Assert.AreEqual("udp", o.Transport);
            Assert.AreEqual(1, o.Players);
            Assert.AreEqual(0, o.FirstPlayer);
            Assert.AreEqual("idle", o.Workload);
            Assert.AreEqual(0, o.Params.Count);
            Assert.AreEqual(0, o.TransportOptions.Count);
            Assert.AreEqual(0.0, o.DurationS);
            Assert.AreEqual(60.0, o.TickRateHz);
            Assert.AreEqual("x", o.LogDir);
            Assert.AreEqual("local", o.RunId);
            Assert.AreEqual(1UL, o.Seed);
            Assert.AreEqual(10.0, o.ProbeHz);
            Assert.AreEqual(2.0, o.ConnectIntervalMs);
            Assert.AreEqual(16, o.ConnectParallel);
            Assert.AreEqual(10.0, o.ConnectTimeoutS);
            Assert.AreEqual(100.0, o.SendSlackUs);
            Assert.AreEqual("server", o.Proc);
            Assert.AreEqual("127.0.0.1:7777", o.Addr);
            CollectionAssert.AreEqual(Argv("-role server -log-dir x"), o.Args);
        }

        [Test]
        public void ParsesEveryContractFlag()
        {
            Options o = Parse("-role client -host 10.0.0.1 -port 9000 -transport tcp -players 50 -first-player 100 "
                + "-workload stream -param size=100 -param rate=30 -param t.mtu=1000 -duration 12.5 -tick-rate 30 "
                + "-log-dir /tmp/x -run-id r1 -seed 18446744073709551615 -probe-hz 5 -connect-interval-ms 0.5 "
                + "-connect-parallel 4 -connect-timeout-s 2.5 -send-slack-us 0");
            Assert.AreEqual("10.0.0.1:9000", o.Addr);
            Assert.AreEqual("tcp", o.Transport);
            Assert.AreEqual(50, o.Players);
            Assert.AreEqual(100, o.FirstPlayer);
            Assert.AreEqual("client-100", o.Proc);
            Assert.AreEqual("stream", o.Workload);
            Assert.AreEqual("100", o.Params["size"]);
            Assert.AreEqual("30", o.Params["rate"]);
            Assert.AreEqual("reliable", o.Params["channel"], "defaults are filled in");
            Assert.AreEqual(100, o.ResolvedWorkload.SizeBytes);
            Assert.AreEqual("1000", o.TransportOptions["mtu"]);
            Assert.IsFalse(o.Params.ContainsKey("t.mtu"));
            Assert.AreEqual(12.5, o.DurationS);
            Assert.AreEqual(30.0, o.TickRateHz);
            Assert.AreEqual("/tmp/x", o.LogDir);
            Assert.AreEqual("r1", o.RunId);
            Assert.AreEqual(ulong.MaxValue, o.Seed);
            Assert.AreEqual(5.0, o.ProbeHz);
            Assert.AreEqual(0.5, o.ConnectIntervalMs);
            Assert.AreEqual(4, o.ConnectParallel);
            Assert.AreEqual(2.5, o.ConnectTimeoutS);
            Assert.AreEqual(0.0, o.SendSlackUs);
        }

        [Test]
        public void EqualsFormsAndDoubleDashAreTheSameFlag()
        {
            Options o = Parse("--role=client -log-dir=d --port 9000 -tick-rate=30 --param=t.k=a=b -workload=active "
                + "-param blocks=3 --duration=1e1");
            Assert.AreEqual("client", o.Role);
            Assert.AreEqual("d", o.LogDir);
            Assert.AreEqual(9000, o.Port);
            Assert.AreEqual(30.0, o.TickRateHz);
            Assert.AreEqual("a=b", o.TransportOptions["k"], "only the first '=' splits key and value");
            Assert.AreEqual("3", o.Params["blocks"]);
            Assert.AreEqual(10.0, o.DurationS);
        }

        [Test]
        public void EmptyValueAfterEqualsIsAValue()
        {
            StringAssert.Contains("-host is empty", Refused("-role server -log-dir x -host=").Message);
        }

        [Test]
        public void TheLastOfARepeatedFlagWins()
        {
            Assert.AreEqual(2, Parse("-role client -log-dir x -players 1 -players 2").Players);
        }

        [Test]
        public void OtherRolesFlagsAreAcceptedAndIgnored()
        {
            Options o = Parse("-role server -log-dir x -players 5 -first-player 3 -probe-hz 0 -connect-timeout-s 2 "
                + "-connect-parallel 1 -connect-interval-ms 0 -send-slack-us 5");
            Assert.AreEqual("server", o.Role);
            Assert.AreEqual("server", o.Proc, "a server's logs never take -first-player's name");
        }

        [Test]
        public void NegativeNumbersAreValuesNotFlags()
        {
            StringAssert.Contains("-duration \"-1\"", Refused("-role client -log-dir x -duration -1").Message);
        }

        [TestCase("-log-dir x", "-role is required (expected server or client)")]
        [TestCase("-role judge -log-dir x", "-role \"judge\": expected server or client")]
        [TestCase("-role server", "-log-dir is required")]
        [TestCase("-role server -log-dir=", "-log-dir is required")]
        [TestCase("-role client -log-dir x -port 0", "-port \"0\": expected an integer in 1..65535")]
        [TestCase("-role client -log-dir x -port 70000", "-port \"70000\": expected an integer in 1..65535")]
        [TestCase("-role client -log-dir x -port http", "-port \"http\"")]
        [TestCase("-role client -log-dir x -port 1.5", "-port \"1.5\"")]
        [TestCase("-role client -log-dir x -players 0", "-players \"0\": expected an integer in 1..100000")]
        [TestCase("-role client -log-dir x -players 100001", "-players \"100001\"")]
        [TestCase("-role client -log-dir x -first-player -1", "-first-player \"-1\": expected a non-negative id")]
        [TestCase("-role client -log-dir x -first-player 4294967295", "-first-player \"4294967295\"")]
        [TestCase("-role client -log-dir x -duration -1", "-duration \"-1\": expected seconds >= 0")]
        [TestCase("-role client -log-dir x -duration NaN", "-duration \"NaN\"")]
        [TestCase("-role client -log-dir x -duration 1,5", "-duration \"1,5\"")]
        [TestCase("-role client -log-dir x -duration 604801", "-duration \"604801\"")]
        [TestCase("-role client -log-dir x -tick-rate 0", "-tick-rate \"0\": expected Hz in (0, 1000]")]
        [TestCase("-role client -log-dir x -tick-rate 1001", "-tick-rate \"1001\"")]
        [TestCase("-role client -log-dir x -seed -3", "-seed \"-3\": expected an unsigned integer")]
        [TestCase("-role client -log-dir x -seed 18446744073709551616", "-seed \"18446744073709551616\"")]
        [TestCase("-role client -log-dir x -seed 1.0", "-seed \"1.0\"")]
        [TestCase("-role client -log-dir x -probe-hz -1", "-probe-hz \"-1\": expected Hz in [0, 1000]")]
        [TestCase("-role client -log-dir x -connect-interval-ms 60001", "-connect-interval-ms \"60001\": expected ms in [0, 60000]")]
        [TestCase("-role client -log-dir x -connect-parallel 0", "-connect-parallel \"0\": expected an integer >= 1")]
        [TestCase("-role client -log-dir x -connect-timeout-s 0", "-connect-timeout-s \"0\": expected seconds in (0, 3600]")]
        [TestCase("-role client -log-dir x -send-slack-us 100001", "-send-slack-us \"100001\": expected µs in [0, 100000]")]
        [TestCase("-role client -log-dir x -transport quic", "-transport \"quic\": expected one of udp, tcp")]
        [TestCase("-role client -log-dir x -param size", "-param \"size\": expected key=value")]
        [TestCase("-role client -log-dir x -param =3", "-param \"=3\": expected key=value")]
        [TestCase("-role client -log-dir x -workload active -param blocks=1 -param blocks=2", "-param blocks given twice")]
        [TestCase("-role client -log-dir x -workload dance", "-workload \"dance\": expected one of")]
        [TestCase("-role client -log-dir x -param size=10", "-param size: workload idle takes no parameters")]
        [TestCase("-role client -log-dir x -workload stream -param size=5", "size=5")]
        [TestCase("-role client -log-dir x -workload stream -param channel=maybe", "channel=maybe")]
        [TestCase("-role client -log-dir x -bogus 1", "flag provided but not defined: -bogus")]
        [TestCase("-role client -log-dir x --frobnicate=1", "flag provided but not defined: -frobnicate")]
        [TestCase("-role client -log-dir x -batchmode", "flag provided but not defined: -batchmode")]
        [TestCase("-role client -log-dir x -target-frame-rate 60", "flag provided but not defined: -target-frame-rate")]
        [TestCase("-role client -log-dir x stray", "unexpected argument \"stray\" (flags are -name value)")]
        [TestCase("-role client -log-dir x -", "unexpected argument \"-\"")]
        [TestCase("-role client -log-dir x -- -port 1", "unexpected argument \"-port\"")]
        [TestCase("-role client -log-dir x ---port 1", "bad flag syntax: ---port")]
        [TestCase("-role client -log-dir x -=1", "bad flag syntax: -=1")]
        [TestCase("-role client -log-dir x -port", "flag needs an argument: -port")]
        public void BadArgumentsNameTheFlagAndWhatWasExpected(string args, string expected)
        {
            StringAssert.Contains(expected, Refused(args).Message);
        }

        [Test]
        public void UsageExceptionIsExitCode2()
        {
            Assert.AreEqual(2, Refused("-bogus").ExitCode);
            Assert.AreEqual(ExitCode.BadArgs, 2);
        }

        [Test]
        public void UnknownFlagMessageListsTheKnownFlags()
        {
            string msg = Refused("-role client -log-dir x -bogus 1").Message;
            StringAssert.Contains("-probe-hz", msg);
            StringAssert.Contains("-seed", msg);
        }

        [Test]
        public void AnOptionalFlagThePrototypeLacksIsUnknown()
        {
            OptionsSpec spec = Spec();
            spec.OptionalFlags.Remove("send-slack-us");
            StringAssert.Contains("-send-slack-us", Refused("-role client -log-dir x -send-slack-us 5", spec).Message);
            Assert.AreEqual(100.0, Options.Parse(Argv("-role client -log-dir x"), spec).SendSlackUs,
                "the default still fills the field");
        }

        [Test]
        public void ExtraFlagsTakeValuesWithDefaults()
        {
            OptionsSpec spec = Spec();
            spec.ExtraFlags["target-frame-rate"] = "-1";
            spec.ExtraFlags["send-rate"] = "30";
            Options o = Options.Parse(Argv("-role client -log-dir x -target-frame-rate 120"), spec);
            Assert.AreEqual("120", o.Extra["target-frame-rate"]);
            Assert.AreEqual("30", o.Extra["send-rate"]);
        }

        [Test]
        public void HostFlagsAreSkippedWithTheirValues()
        {
            OptionsSpec spec = Spec();
            spec.HostFlags["batchmode"] = false;
            spec.HostFlags["nographics"] = false;
            spec.HostFlags["logFile"] = true;
            Options o = Options.Parse(Argv("-batchmode -role client -nographics -logFile /dev/stdout -log-dir x "
                + "-logFile=y -players 3"), spec);
            Assert.AreEqual(3, o.Players);
            Assert.AreEqual("x", o.LogDir);
            CollectionAssert.Contains(o.Args, "-batchmode", "Args keep the command line as received");
        }

        [Test]
        public void ArgvZeroIsRequired()
        {
            Assert.Throws<ArgumentException>(() => Options.Parse(new string[0], Spec()));
        }

        [Test]
        public void AWorkloadThePrototypeDoesNotImplementIsRefused()
        {
            OptionsSpec spec = Spec();
            spec.ImplementedWorkloads = new HashSet<string> { "idle", "stream" };
            string msg = Refused("-role client -log-dir x -workload envmod", spec).Message;
            StringAssert.Contains("-workload \"envmod\": expected one of idle, stream", msg);
            Assert.AreEqual("stream", Options.Parse(Argv("-role client -log-dir x -workload stream"), spec).Workload);
        }

        [Test]
        public void TheWorkloadResolverIsTheSpecs()
        {
            OptionsSpec spec = Spec();
            IDictionary<string, string> seen = null;
            spec.ResolveWorkload = (name, given) =>
            {
                seen = given;
                var w = new Workload { Name = name };
                w.Params["k"] = "filled";
                return w;
            };
            Options o = Options.Parse(Argv("-role client -log-dir x -workload custom -param a=1 -param t.x=2"), spec);
            Assert.AreEqual("custom", o.Workload);
            Assert.AreEqual("filled", o.Params["k"]);
            Assert.AreEqual(1, seen.Count, "transport options are not workload parameters");
            Assert.AreEqual("1", seen["a"]);
        }

        [Test]
        public void ParsingIsCultureInvariant()
        {
            var saved = System.Threading.Thread.CurrentThread.CurrentCulture;
            try
            {
                System.Threading.Thread.CurrentThread.CurrentCulture = new System.Globalization.CultureInfo("de-DE");
                Assert.AreEqual(12.5, Parse("-role client -log-dir x -duration 12.5").DurationS);
                StringAssert.Contains("-duration \"12,5\"", Refused("-role client -log-dir x -duration 12,5").Message);
            }
            finally
            {
                System.Threading.Thread.CurrentThread.CurrentCulture = saved;
            }
        }
    }
}
