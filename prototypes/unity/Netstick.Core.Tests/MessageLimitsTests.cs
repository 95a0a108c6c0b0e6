using System;
using System.Collections.Generic;
using System.Linq;
using NUnit.Framework;

namespace Netstick.Core.Tests
{
    /// <summary>
    /// The core keeps below its transport's message limits (CONTRACT.md §5, "Message sizes"): State and
    /// BlockChanges batches are cut at the limit, to the byte, and every transform and block change still
    /// arrives; a probe that does not fit its channel, and a world whose chunks do not, are refused when the
    /// process starts, naming the limit. Each at a limit and one byte below it.
    /// </summary>
    [TestFixture]
    public class MessageLimitsTests
    {
        private static readonly MessageLimits Roomy = MessageLimits.Contract;

        private static IEnumerable<byte[]> Sent(GameTests.Game g, byte type)
        {
            return g.Net.Server.Log.Select(s => s.Message).Where(m => m[0] == type);
        }

        private static int Count(byte[] message)
        {
            return (message[5] << 8) | message[6];
        }

        /// <summary>Per tick, the transforms the server sent, as bytes in the order sent (one recipient).</summary>
        private static Dictionary<uint, List<byte>> TransformsByTick(MessageLimits limits, out int largest)
        {
            using (var g = new GameTests.Game("-tick-rate 20 -workload wander",
                "-players 12 -duration 1 -workload wander -tick-rate 20", limits: limits))
            {
                g.RunToEnd(5000000000L);
                Assert.AreEqual(ExitCode.Ok, g.Client.ExitCode);
                int peer = g.Net.Server.Log.First(s => s.Message[0] == Wire.TState).Peer;
                var byTick = new Dictionary<uint, List<byte>>();
                largest = 0;
                foreach (MemoryServer.Sent s in g.Net.Server.Log.Where(s => s.Message[0] == Wire.TState && s.Peer == peer))
                {
                    uint tick = (uint)((s.Message[1] << 24) | (s.Message[2] << 16) | (s.Message[3] << 8) | s.Message[4]);
                    List<byte> bytes;
                    if (!byTick.TryGetValue(tick, out bytes))
                    {
                        byTick[tick] = bytes = new List<byte>();
                    }
                    bytes.AddRange(s.Message.Skip(Wire.StateHeaderBytes));
                    largest = Math.Max(largest, s.Message.Length);
                }
                return byTick;
            }
        }

        [TestCase(5, 1)]
        [TestCase(5, 0)]
        [TestCase(5, -1)]
        [TestCase(1, 0)]
        public void StatesAreCutAtTheUnreliableLimitAndEveryTransformIsSent(int perMessage, int offset)
        {
            int limit = Wire.StateHeaderBytes + perMessage * Wire.TransformBytes + offset;
            int roomyLargest, largest;
            // The game runs on a simulated clock: with any limit the same players move in the same ticks.
            Dictionary<uint, List<byte>> whole = TransformsByTick(Roomy, out roomyLargest);
            Dictionary<uint, List<byte>> cut = TransformsByTick(
                new MessageLimits(Roomy.ReliableBytes, limit, "a test's unreliable limit"), out largest);
            int fits = (limit - Wire.StateHeaderBytes) / Wire.TransformBytes;
            Assert.AreEqual(Wire.StateHeaderBytes + fits * Wire.TransformBytes, largest,
                "States as large as the limit allows, never larger");
            Assert.Greater(roomyLargest, largest, "the limit made a difference");
            CollectionAssert.AreEquivalent(whole.Keys, cut.Keys);
            foreach (uint tick in whole.Keys)
            {
                CollectionAssert.AreEqual(whole[tick], cut[tick], "tick " + tick + ": every transform, in order");
            }
        }

        [TestCase(7, 1)]
        [TestCase(7, 0)]
        [TestCase(7, -1)]
        public void BlockChangesAreCutAtTheReliableLimitAndEveryChangeIsSent(int perMessage, int offset)
        {
            int limit = Wire.BlockChangesHeaderBytes + perMessage * Wire.BlockChangeBytes + offset;
            var limits = new MessageLimits(limit, Roomy.UnreliableBytes, "a test's reliable limit");
            using (var g = new GameTests.Game("-tick-rate 20 -workload envmod -param blocks=50 -param interval=0.2",
                "-players 1 -duration 1 -workload envmod", limits: limits))
            {
                g.RunToEnd(5000000000L);
                List<byte[]> batches = Sent(g, Wire.TBlockChanges).ToList();
                Assert.IsNotEmpty(batches);
                Assert.LessOrEqual(batches.Max(m => m.Length), limit);
                int fits = (limit - Wire.BlockChangesHeaderBytes) / Wire.BlockChangeBytes;
                Assert.AreEqual(fits, batches.Max(Count));
                int steps = g.Events("server", "envmod_step").Count;
                Assert.AreEqual(steps * 50, batches.Sum(Count), "every step's 50 blocks");
            }
        }

        [TestCase("stream", "reliable")]
        [TestCase("pingpong", "unreliable")]
        public void AProbeFitsItsChannelToTheByteAndOneMoreIsRefusedNamingTheLimit(string workload, string channel)
        {
            const int limit = 700;
            bool reliable = channel == "reliable";
            var limits = new MessageLimits(reliable ? limit : Roomy.ReliableBytes, reliable ? Roomy.UnreliableBytes : limit,
                "a test's limit");
            string args = "-workload " + workload + " -param channel=" + channel + " -param size=";
            using (var g = new GameTests.Game("-tick-rate 20 " + args + limit, "-players 1 -duration 1 " + args + limit,
                limits: limits))
            {
                g.RunToEnd(5000000000L);
                Assert.AreEqual(ExitCode.Ok, g.Client.ExitCode);
                Assert.IsTrue(Sent(g, Wire.TProbeEcho).Any(m => m.Length == limit), "probes of exactly the limit echoed");
            }
            var refused = Assert.Throws<UsageException>(() => new GameTests.Game(
                "-tick-rate 20 " + args + (limit + 1), "-players 1 -duration 1 " + args + (limit + 1), limits: limits));
            StringAssert.Contains("-param size=701: 701 bytes on the " + channel + " channel: transport memory carries at most 700 bytes there (a test's limit)",
                refused.Message);
        }

        [Test]
        public void AWorldWhoseChunksDoNotFitTheReliableChannelIsRefused()
        {
            var fits = new MessageLimits(World.MaxChunkMessageBytes, Roomy.UnreliableBytes, "exactly a chunk");
            using (var g = new GameTests.Game("-tick-rate 20 -workload world -param objects=5000",
                "-players 1 -duration 0.5 -workload world", limits: fits))
            {
                g.RunToEnd(5000000000L);
                Assert.AreEqual(ExitCode.Ok, g.Client.ExitCode);
                Assert.LessOrEqual(Sent(g, Wire.TWorldChunk).Max(m => m.Length), World.MaxChunkMessageBytes);
            }
            var small = new MessageLimits(World.MaxChunkMessageBytes - 1, Roomy.UnreliableBytes, "one byte short");
            var refused = Assert.Throws<UsageException>(() => new GameTests.Game(
                "-tick-rate 20 -workload world -param objects=5000", "-players 1 -workload world", limits: small));
            StringAssert.Contains("a world chunk takes up to 12311 bytes, but transport memory carries at most 12310",
                refused.Message);
        }
    }
}
