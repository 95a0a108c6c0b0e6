using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using NUnit.Framework;

namespace Netstick.Core.Tests
{
    /// <summary>
    /// ServerCore and ClientCore playing over <see cref="MemoryNet"/> on a simulated clock: the behaviour
    /// of CONTRACT.md §2–§5 as the logs show it, without sockets or waiting.
    /// </summary>
    [TestFixture]
    public class GameTests
    {
        internal sealed class Game : IDisposable
        {
            public long Now = 5000000000000L;
            public readonly MemoryNet Net = new MemoryNet();
            public readonly string Dir = TestFiles.TempDir();
            public readonly ServerCore Server;
            public readonly ClientCore Client;
            private readonly EventLog serverEvents, clientEvents;
            private readonly TickLog ticks;
            private readonly RttLog rtt;
            private bool closed;

            public Game(string serverArgs, string clientArgs, bool startServer = true, bool reliable = true,
                MessageLimits limits = null)
            {
                Net.Client.Reliable = reliable;
                if (limits != null)
                {
                    Net.Limits = limits;
                }
                var spec = new OptionsSpec("memory", "memory", "memory");
                Options so = Options.Parse(Argv("-role server -log-dir " + Dir + " " + serverArgs), spec);
                Options co = Options.Parse(Argv("-role client -log-dir " + Dir + " " + clientArgs), spec);
                serverEvents = EventLog.Create(Dir, so.Proc);
                ticks = TickLog.Create(Dir);
                clientEvents = EventLog.Create(Dir, co.Proc);
                rtt = RttLog.Create(Dir, co.Proc);
                Server = new ServerCore(so, Net.Server, serverEvents, ticks) { MonoClock = () => Now };
                Client = new ClientCore(co, Net.Client, rtt, clientEvents) { MonoClock = () => Now };
                if (startServer)
                {
                    Server.Start();
                }
                Client.Start();
            }

            private static string[] Argv(string args)
            {
                var list = new List<string> { "test" };
                list.AddRange(args.Split(new[] { ' ' }, StringSplitOptions.RemoveEmptyEntries));
                return list.ToArray();
            }

            /// <summary>Steps both cores every stepNs of simulated time until done() or maxNs passed.</summary>
            public void Run(Func<bool> done, long maxNs, long stepNs = 1000000L)
            {
                long end = Now + maxNs;
                while (!done() && Now < end)
                {
                    Server.Step(Now);
                    Client.Step(Now);
                    Now += stepNs;
                }
                Assert.IsTrue(done(), "the game did not get there within " + maxNs / 1e9 + " s of simulated time");
            }

            public void RunToEnd(long maxNs)
            {
                Run(() => Client.Finished, maxNs);
            }

            /// <summary>The rows of a log file (closing the logs first), split at commas, header dropped.</summary>
            public List<string[]> Rows(string file)
            {
                Close();
                return File.ReadAllLines(Path.Combine(Dir, file)).Skip(1).Select(l => l.Split(',')).ToList();
            }

            public List<string[]> Events(string proc, string ev)
            {
                return Rows(proc + ".events.csv").Where(r => r[2] == ev).ToList();
            }

            private void Close()
            {
                if (closed)
                {
                    return;
                }
                closed = true;
                Server.Stop("test over");
                serverEvents.Close();
                ticks.Close();
                clientEvents.Close();
                rtt.Close();
            }

            public void Dispose()
            {
                Close();
                Directory.Delete(Dir, true);
            }
        }

        private static Dictionary<string, string> Detail(string detail)
        {
            return detail.Split(' ').Select(kv => kv.Split('=')).ToDictionary(kv => kv[0], kv => kv[1]);
        }

        [Test]
        public void PlayersConnectOnceSpawnOnTheirGridAndEveryProbeIsEchoed()
        {
            using (var g = new Game("-tick-rate 50", "-players 3 -first-player 32 -duration 2 -probe-hz 20"))
            {
                g.Run(() => g.Client.AllConnected, 1000000000L);
                Assert.Greater(g.Client.ConnectS, 0.0);
                g.RunToEnd(5000000000L);
                Assert.AreEqual(ExitCode.Ok, g.Client.ExitCode);
                Assert.AreEqual(3, g.Server.PlayersConnected);

                foreach (string ev in new[] { "connect", "spawn", "world_loaded" })
                {
                    CollectionAssert.AreEqual(new[] { "32", "33", "34" },
                        g.Events("client-32", ev).Select(r => r[1]).OrderBy(s => s), ev + " once per player");
                }
                Dictionary<string, string> spawn33 = Detail(g.Events("client-32", "spawn").First(r => r[1] == "33")[4]);
                Assert.AreEqual("-30", spawn33["x"]); // 2·(33 mod 32) − 32
                Assert.AreEqual("0", spawn33["y"]);
                Assert.AreEqual("-30", spawn33["z"]); // 2·⌊33/32⌋ − 32
                Assert.AreEqual("objects=0 bytes=0", g.Events("client-32", "world_loaded")[0][4]);
                CollectionAssert.AreEquivalent(new[] { "32", "33", "34" }, g.Events("server", "join").Select(r => r[1]));

                List<string[]> probes = g.Events("client-32", "probes");
                Assert.AreEqual(6, probes.Count, "one per player and kind");
                foreach (string[] row in probes)
                {
                    Dictionary<string, string> d = Detail(row[4]);
                    Assert.AreEqual(row[3], d["echoed"], "every probe echoed: " + row[4]);
                    Assert.AreEqual("0", d["lost"]);
                    Assert.AreEqual("0", d["inflight"]);
                    Assert.That(long.Parse(row[3]), Is.InRange(38L, 41L), "20 Hz for 2 s");
                }
                List<string[]> rtts = g.Rows("client-32.rtt.csv");
                Assert.IsTrue(rtts.Any(r => r[4] == "net") && rtts.Any(r => r[4] == "app"));
                Assert.IsFalse(rtts.Any(r => r[4] == "lib"), "the transport keeps no estimate");
                Assert.IsTrue(rtts.All(r => r[5] != "" && double.Parse(r[5]) >= 0), "scheduled probes log their lateness");
            }
        }

        [Test]
        public void NetProbesAreEchoedInTheReceivePathAppProbesInTheNextTick()
        {
            using (var g = new Game("-tick-rate 10", "-players 1 -duration 1 -probe-hz 5"))
            {
                g.RunToEnd(5000000000L);
                List<MemoryServer.Sent> echoes = g.Net.Server.Log.Where(s => s.Message[0] == Wire.TProbeEcho).ToList();
                Assert.IsNotEmpty(echoes);
                foreach (MemoryServer.Sent s in echoes)
                {
                    Probe p = Wire.DecodeProbe(s.Message, s.Message.Length);
                    Assert.AreEqual(p.Kind == Wire.ProbeNet, s.InPoll, "net echoes in Poll, app echoes in the tick");
                }
                // At 10 Hz ticks an app round trip waits for the tick: on average half a period, net ones none.
                List<string[]> rtts = g.Rows("client-0.rtt.csv");
                double appUs = rtts.Where(r => r[4] == "app").Average(r => double.Parse(r[3]));
                double netUs = rtts.Where(r => r[4] == "net").Average(r => double.Parse(r[3]));
                Assert.Greater(appUs, 10000.0);
                Assert.Less(netUs, appUs);
            }
        }

        [Test]
        public void ActivePlayersBuildATowerAndEveryActionIsAcknowledged()
        {
            using (var g = new Game("-tick-rate 100", "-players 2 -workload active -param blocks=3 -param interval=0.2 -duration 1.5 -probe-hz 0"))
            {
                g.RunToEnd(5000000000L);
                List<string[]> places = g.Events("client-0", "block_place").Where(r => r[1] == "1").ToList();
                Assert.AreEqual(3, places.Count);
                CollectionAssert.AreEqual(new[] { "x=-30 y=0 z=-32", "x=-30 y=1 z=-32", "x=-30 y=2 z=-32" },
                    places.Select(r => r[4]));
                List<string[]> acks = g.Events("client-0", "block_ack");
                Assert.AreEqual(6, acks.Count);
                Assert.IsTrue(acks.All(r => r[4].EndsWith(" ok=true", StringComparison.Ordinal)));
                Assert.AreEqual(6, g.Server.World.Blocks);
                Assert.AreEqual(1 + 1 % 8, g.Server.World.Get(-30, 2, -32));
                Assert.IsEmpty(g.Events("client-0", "probes"), "no probes with -probe-hz 0");
            }
        }

        [Test]
        public void RpcToggleAlternatesPlaceAndRemoveBesideTheSpawn()
        {
            using (var g = new Game("-tick-rate 100", "-players 1 -workload rpc-toggle -param interval=0.1 -duration 0.55 -probe-hz 0"))
            {
                g.RunToEnd(5000000000L);
                List<string[]> acts = g.Rows("client-0.events.csv").Where(r => r[2].StartsWith("block_", StringComparison.Ordinal) && r[2] != "block_ack").ToList();
                Assert.GreaterOrEqual(acts.Count, 5);
                for (int i = 0; i < acts.Count; i++)
                {
                    Assert.AreEqual(i % 2 == 0 ? "block_place" : "block_remove", acts[i][2]);
                    Assert.AreEqual("x=-31 y=0 z=-32", acts[i][4]);
                }
                Assert.IsTrue(g.Events("client-0", "block_ack").All(r => r[4].EndsWith("ok=true", StringComparison.Ordinal)));
            }
        }

        [Test]
        public void EnvmodStepsShrinkTheirIntervalDownToOneTick()
        {
            using (var g = new Game("-tick-rate 100 -workload envmod -param blocks=4 -param interval=0.1 -param interval_change=0.04",
                "-players 1 -duration 0.5 -probe-hz 0 -workload envmod -param blocks=4 -param interval=0.1 -param interval_change=0.04"))
            {
                g.RunToEnd(5000000000L);
                List<string[]> steps = g.Events("server", "envmod_step");
                Assert.GreaterOrEqual(steps.Count, 5);
                string[] intervals = steps.Take(5).Select(r => Detail(r[4])["interval_s"]).ToArray();
                CollectionAssert.AreEqual(new[] { "0.1000", "0.0600", "0.0200", "0.0100", "0.0100" }, intervals);
                for (int k = 0; k < steps.Count; k++)
                {
                    Assert.AreEqual(k.ToString(), Detail(steps[k][4])["step"]);
                    Assert.AreEqual("4", steps[k][3]);
                    // side ⌈√4⌉ = 2: x, z ∈ {−1, 0} on layer y = 8 + k, kind 1 + k mod 8
                    Assert.AreEqual(1 + k % 8, g.Server.World.Get(-1, 8 + k, 0));
                    Assert.AreEqual(1 + k % 8, g.Server.World.Get(0, 8 + k, -1));
                }
                Assert.AreEqual(0, g.Server.World.Get(1, 8, 0));
                Assert.AreEqual(4 * steps.Count, g.Server.World.Blocks);
            }
        }

        [Test]
        public void AWorldIsBuiltBeforeStartAndLoadedByEveryPlayer()
        {
            using (var g = new Game("-workload world -param objects=2000", "-players 2 -duration 0.2 -workload world -param objects=2000", false))
            {
                Assert.AreEqual(2000, g.Server.World.Blocks, "built in the constructor, before READY");
                g.Server.Start();
                g.RunToEnd(5000000000L);
                List<string[]> loaded = g.Events("client-0", "world_loaded");
                Assert.AreEqual(2, loaded.Count);
                Dictionary<string, string> d = Detail(loaded[0][4]);
                Assert.AreEqual("2000", d["objects"]);
                long bytes = g.Net.Server.Log.Where(s => s.Message[0] == Wire.TWorldChunk && s.Peer == 1000).Sum(s => (long)s.Message.Length);
                Assert.AreEqual(bytes.ToString(), d["bytes"]);
            }
        }

        [Test]
        public void APlayerThatCannotConnectEndsTheClientWithExit4NamingIt()
        {
            using (var g = new Game("", "-players 2 -first-player 7 -connect-timeout-s 1.5", false))
            {
                g.RunToEnd(3000000000L);
                Assert.AreEqual(ExitCode.Connect, g.Client.ExitCode);
                StringAssert.StartsWith("player 7 over memory: player could not connect within -connect-timeout-s 1.5:", g.Client.ExitReason);
                Assert.IsFalse(g.Client.AllConnected);
                Assert.AreEqual("7", g.Events("client-7", "connect_failed")[0][1]);
                Assert.IsEmpty(g.Events("client-7", "probes"));
            }
        }

        [Test]
        public void AServerThatGoesAwayIsLostExit5()
        {
            using (var g = new Game("", "-players 2 -duration 0"))
            {
                g.Run(() => g.Client.AllConnected, 1000000000L);
                long until = g.Now + 300000000L;
                g.Run(() => g.Now >= until, 400000000L);
                g.Server.Stop("signal SIGTERM");
                g.RunToEnd(1000000000L);
                Assert.AreEqual(ExitCode.Lost, g.Client.ExitCode);
                Assert.AreEqual(2, g.Events("client-0", "disconnect").Count);
                List<string[]> lost = g.Events("client-0", "server_lost");
                Assert.AreEqual(1, lost.Count);
                StringAssert.Contains("connection_to_the_server_lost", lost[0][4]);
                Assert.AreEqual(4, g.Events("client-0", "probes").Count, "probes are still accounted for");
            }
        }

        [Test]
        public void AStopDrainsAtMostOneSecondAndAccountsForEveryProbe()
        {
            using (var g = new Game("-tick-rate 20", "-players 1 -duration 0 -probe-hz 10"))
            {
                g.Run(() => g.Client.AllConnected, 1000000000L);
                long until = g.Now + 1000000000L;
                g.Run(() => g.Now >= until, 1100000000L);
                // From now on the server answers nothing: probes in flight stay unanswered through the drain.
                g.Net.DropToClient = (m, c) => m[0] == Wire.TProbeEcho;
                g.Run(() => g.Now >= until + 200000000L, 300000000L);
                long stopAt = g.Now;
                g.Client.Stop("signal SIGTERM");
                g.RunToEnd(2000000000L);
                Assert.AreEqual(ExitCode.Ok, g.Client.ExitCode);
                Assert.That(g.Now - stopAt, Is.InRange(1000000000L, 1010000000L), "the drain waits 1 s, no more");
                foreach (string[] row in g.Events("client-0", "probes"))
                {
                    Dictionary<string, string> d = Detail(row[4]);
                    long sent = long.Parse(row[3]);
                    Assert.AreEqual(sent, long.Parse(d["echoed"]) + long.Parse(d["lost"]) + long.Parse(d["inflight"]));
                    Assert.Greater(long.Parse(d["inflight"]), 0L, row[4]);
                }
            }
        }

        [Test]
        public void PingpongGivesUpALostEchoAfterFiveSecondsAndGoesOn()
        {
            using (var g = new Game("", "-players 1 -duration 7 -probe-hz 0 -workload pingpong -param count=3 -param channel=unreliable"))
            {
                bool dropped = false;
                g.Net.DropToClient = (m, c) =>
                {
                    if (m[0] != Wire.TProbeEcho || dropped)
                    {
                        return false;
                    }
                    Assert.AreEqual(Channel.Unreliable, c, "echoed on the probe's channel");
                    dropped = true;
                    return true;
                };
                g.RunToEnd(9000000000L);
                List<string[]> rows = g.Rows("client-0.rtt.csv");
                CollectionAssert.AreEqual(new[] { "1", "2" }, rows.Select(r => r[2]));
                Assert.IsTrue(rows.All(r => r[4] == "net" && r[5] == ""), "pingpong probes are unscheduled");
                long t0 = long.Parse(g.Events("client-0", "connect")[0][0]);
                Dictionary<string, string> d = Detail(g.Events("client-0", "probes")[0][4]);
                Assert.AreEqual("kind=net", "kind=" + d["kind"]);
                Assert.AreEqual("3", g.Events("client-0", "probes")[0][3]);
                Assert.AreEqual("2", d["echoed"]);
                Assert.AreEqual("1", d["lost"]);
                Assert.Greater(t0, 0L);
            }
        }

        [Test]
        public void TheLibrarysOwnEstimateIsSampledAtTwoHertzWhenItKeepsOne()
        {
            using (var g = new Game("", "-players 1 -duration 2 -probe-hz 0"))
            {
                g.Net.Client.LibRttUs = 123.5;
                g.RunToEnd(4000000000L);
                List<string[]> lib = g.Rows("client-0.rtt.csv").Where(r => r[4] == "lib").ToList();
                Assert.That(lib.Count, Is.InRange(4, 5));
                Assert.IsTrue(lib.All(r => r[3] == "123.500" && r[5] == ""));
                Assert.IsEmpty(g.Events("client-0", "probes"), "lib is read, not probed");
            }
        }

        [Test]
        public void MalformedMessagesAreCountedNeverFatal()
        {
            using (var g = new Game("-tick-rate 10", "-players 1 -duration 1.5"))
            {
                g.Run(() => g.Client.AllConnected, 1000000000L);
                g.Net.Client.Send(0, new byte[] { 99, 1, 2 }, 3, Channel.Reliable);
                g.Net.Client.Send(0, new byte[] { Wire.TProbe, 1 }, 2, Channel.Reliable);
                g.RunToEnd(4000000000L);
                Assert.AreEqual(ExitCode.Ok, g.Client.ExitCode);
                List<string[]> bad = g.Events("server", "malformed");
                Assert.AreEqual(1, bad.Count);
                Assert.AreEqual("2", bad[0][3]);
                StringAssert.Contains("unexpected_message_type_99", bad[0][4]);
            }
        }

        [Test]
        public void ASecondConnectionForAConnectedPlayerIsRefused()
        {
            using (var g = new Game("", "-players 1 -duration 0.3"))
            {
                g.Run(() => g.Client.AllConnected, 1000000000L);
                const int intruder = 4242;
                g.Net.Server.Peers.Add(intruder);
                var hello = new WireBuffer();
                Wire.AppendHello(hello, new Hello { Player = 0, Schema = Wire.SchemaVersion });
                g.Server.OnJoin(intruder, "memory:intruder");
                g.Server.OnMessage(intruder, hello.Data, hello.Length, Channel.Reliable);
                Assert.IsFalse(g.Net.Server.Peers.Contains(intruder), "its connection is closed");
                g.RunToEnd(2000000000L);
                Assert.AreEqual(ExitCode.Ok, g.Client.ExitCode, "the first connection plays on");
                List<string[]> errors = g.Events("server", "error");
                Assert.AreEqual(1, errors.Count);
                Assert.AreEqual("0", errors[0][1]);
                Assert.AreEqual(1, g.Events("server", "join").Count);
            }
        }

        [Test]
        public void HellosAreRepeatedOnlyWhereTheReliableChannelIsNot()
        {
            using (var g = new Game("", "-players 1 -duration 0.1", true, false))
            {
                g.Net.DropToClient = (m, c) => m[0] == Wire.TWelcome && g.Now < 5000300000000L; // lose welcomes for 0.3 s
                g.RunToEnd(3000000000L);
                Assert.AreEqual(ExitCode.Ok, g.Client.ExitCode);
                using (var once = new Game("", "-players 1 -duration 0.1"))
                {
                    once.Net.DropToClient = (m, c) => m[0] == Wire.TWelcome && once.Now < 5000300000000L;
                    once.Run(() => once.Now >= 5001000000000L, 2000000000L);
                    Assert.IsFalse(once.Client.AllConnected, "over a reliable channel the one hello is not repeated");
                    Assert.AreEqual(1, once.Net.Server.Log.Count(s => s.Message[0] == Wire.TWelcome));
                }
                int welcomes = g.Net.Server.Log.Count(s => s.Message[0] == Wire.TWelcome);
                Assert.That(welcomes, Is.InRange(2, 3), "hello repeated every 250 ms until welcomed");
                Assert.AreEqual(1, g.Events("server", "join").Count, "a repeated hello is no second join");
                Assert.AreEqual(1, g.Events("client-0", "connect").Count);
            }
        }
    }
}
