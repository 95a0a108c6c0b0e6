using System;
using System.Collections.Generic;
using System.IO;
using System.Text;
using System.Text.RegularExpressions;
using NUnit.Framework;

namespace Netstick.Core.Tests
{
    /// <summary>
    /// The codec against prototypes/contract/wire-golden.json, the golden bytes the Go reference's
    /// encoder produces (its golden_test.go checks the same file): same values here, same bytes.
    /// </summary>
    [TestFixture]
    public class WireTests
    {
        private static readonly Regex Entry = new Regex(
            "\\{\\s*\"name\":\\s*\"(?<name>[^\"]+)\",\\s*\"hex\":\\s*\"(?<hex>[0-9a-f]*)\"(?:,\\s*\"error\":\\s*\"(?<error>[a-z]+)\")?\\s*\\}");

        private static Dictionary<string, string> golden;
        private static Dictionary<string, string> malformed;

        private static void Load()
        {
            if (golden != null)
            {
                return;
            }
            golden = new Dictionary<string, string>();
            malformed = new Dictionary<string, string>();
            string text = File.ReadAllText(TestFiles.Repo("prototypes/contract/wire-golden.json"));
            int split = text.IndexOf("\"malformed\"", StringComparison.Ordinal);
            Assert.Greater(split, 0, "wire-golden.json has a malformed list");
            foreach (Match m in Entry.Matches(text))
            {
                if (m.Index < split)
                {
                    golden.Add(m.Groups["name"].Value, m.Groups["hex"].Value);
                }
                else
                {
                    malformed.Add(m.Groups["name"].Value, m.Groups["hex"].Value + "/" + m.Groups["error"].Value);
                }
            }
        }

        private static byte[] Bytes(string hex)
        {
            var b = new byte[hex.Length / 2];
            for (int i = 0; i < b.Length; i++)
            {
                b[i] = Convert.ToByte(hex.Substring(2 * i, 2), 16);
            }
            return b;
        }

        private static string Hex(WireBuffer buf)
        {
            var sb = new StringBuilder();
            for (int i = 0; i < buf.Length; i++)
            {
                sb.Append(buf.Data[i].ToString("x2"));
            }
            return sb.ToString();
        }

        private static readonly Welcome TheWelcome = new Welcome
        {
            Player = 7, Spawn = new Vec3(1.5f, 2, -3), TickRateHz = 60, WorldBlocks = 40000, WorldChunks = 160,
        };
        private static readonly Probe TheProbe = new Probe { Kind = Wire.ProbeApp, Player = 3, Seq = 99, SentMonoNs = 123456789 };
        private static readonly Probe TheEcho = new Probe { Kind = Wire.ProbeNet, Player = uint.MaxValue, Seq = 0, SentMonoNs = -1 };
        private static readonly Input TheInput = new Input { Player = 1, Seq = 2, Pos = new Vec3(3, 4, 5), Yaw = 0.5f };
        private static readonly BlockAction ThePlace = new BlockAction
        {
            Action = 9, Op = Wire.OpPlace, Pos = new BlockPos(-1, 2, -3), Kind = 4,
        };
        private static readonly BlockAction TheRemove = new BlockAction { Action = 10, Op = Wire.OpRemove, Pos = new BlockPos(0, 0, 0) };
        private static readonly Transform[] TheTransforms =
        {
            new Transform { Player = 1, Pos = new Vec3(1, 2, 3), Yaw = 1 },
            new Transform { Player = 2, Pos = new Vec3(4, 5, 6), Yaw = 2 },
        };
        private static readonly BlockChange[] TheChanges =
        {
            new BlockChange(new BlockPos(1, 2, 3), 5), new BlockChange(new BlockPos(-4, 0, 9), 0),
        };

        private static WorldChunk TheChunk()
        {
            return new WorldChunk
            {
                Seq = 1, Total = 3, CX = -1, CY = 0, CZ = 2,
                Blocks = new List<ChunkBlock> { new ChunkBlock(0, 1), new ChunkBlock(4095, 255) },
            };
        }

        // The same values as golden_test.go's goldenCases, by name.
        private static WireBuffer Encode(string name)
        {
            var b = new WireBuffer(8); // small, so that the tests also cover growing
            switch (name)
            {
                case "hello": Wire.AppendHello(b, new Hello { Player = 42, Schema = Wire.SchemaVersion }); break;
                case "welcome": Wire.AppendWelcome(b, TheWelcome); break;
                case "world_chunk": Wire.AppendWorldChunk(b, TheChunk()); break;
                case "probe": Wire.AppendProbe(b, Wire.TProbe, TheProbe, 0); break;
                case "probe_padded_24": Wire.AppendProbe(b, Wire.TProbe, TheProbe, 24); break;
                case "probe_echo": Wire.AppendProbe(b, Wire.TProbeEcho, TheEcho, Wire.ProbeHeaderBytes); break;
                case "input": Wire.AppendInput(b, TheInput); break;
                case "block_action_place": Wire.AppendBlockAction(b, ThePlace); break;
                case "block_action_remove": Wire.AppendBlockAction(b, TheRemove); break;
                case "block_ack_ok": Wire.AppendBlockAck(b, new BlockAck { Action = 9, Ok = true }); break;
                case "block_ack_refused": Wire.AppendBlockAck(b, new BlockAck { Action = 10, Ok = false }); break;
                case "state":
                    int start = Wire.AppendStateHeader(b, 77);
                    foreach (Transform t in TheTransforms)
                    {
                        Wire.AppendTransform(b, t);
                    }
                    Wire.FinishState(b, start, TheTransforms.Length);
                    break;
                case "state_empty": Wire.AppendState(b, 0, new Transform[0]); break;
                case "block_changes": Wire.AppendBlockChanges(b, 5, TheChanges); break;
                case "keepalive": Wire.AppendKeepalive(b, 8); break;
                default: Assert.Fail("wire-golden.json names a message this test does not build: " + name); break;
            }
            return b;
        }

        [Test]
        public void EveryGoldenMessageEncodesToTheGoBytes()
        {
            Load();
            Assert.AreEqual(15, golden.Count, "messages in wire-golden.json");
            var types = new HashSet<byte>();
            foreach (var kv in golden)
            {
                Assert.AreEqual(kv.Value, Hex(Encode(kv.Key)), kv.Key);
                byte[] b = Bytes(kv.Value);
                types.Add(b[0]);
                Assert.IsNull(Wire.Check(b, b.Length), kv.Key);
            }
            for (byte t = Wire.THello; t <= Wire.TKeepalive; t++)
            {
                Assert.IsTrue(types.Contains(t), "type " + t + " has golden bytes");
            }
        }

        [Test]
        public void EveryGoldenMessageDecodesToItsValues()
        {
            Load();
            byte[] b = Bytes(golden["hello"]);
            Hello h = Wire.DecodeHello(b, b.Length);
            Assert.AreEqual(42u, h.Player);
            Assert.AreEqual(1, h.Schema);

            b = Bytes(golden["welcome"]);
            Assert.AreEqual(TheWelcome, Wire.DecodeWelcome(b, b.Length));

            b = Bytes(golden["world_chunk"]);
            var blocks = new List<ChunkBlock> { new ChunkBlock(1, 1), new ChunkBlock(2, 2), new ChunkBlock(3, 3) };
            WorldChunk c = Wire.DecodeWorldChunk(b, b.Length, blocks);
            Assert.AreSame(blocks, c.Blocks, "the destination list is reused");
            Assert.AreEqual(new object[] { 1u, 3u, -1, 0, 2 }, new object[] { c.Seq, c.Total, c.CX, c.CY, c.CZ });
            CollectionAssert.AreEqual(TheChunk().Blocks, c.Blocks);

            foreach (string name in new[] { "probe", "probe_padded_24" })
            {
                b = Bytes(golden[name]);
                Assert.AreEqual(TheProbe, Wire.DecodeProbe(b, b.Length), name);
            }
            b = Bytes(golden["probe_echo"]);
            Assert.AreEqual(TheEcho, Wire.DecodeProbe(b, b.Length));
            Assert.AreEqual(Wire.TProbeEcho, b[0]);

            b = Bytes(golden["input"]);
            Assert.AreEqual(TheInput, Wire.DecodeInput(b, b.Length));
            b = Bytes(golden["block_action_place"]);
            Assert.AreEqual(ThePlace, Wire.DecodeBlockAction(b, b.Length));
            b = Bytes(golden["block_action_remove"]);
            Assert.AreEqual(TheRemove, Wire.DecodeBlockAction(b, b.Length));
            b = Bytes(golden["block_ack_ok"]);
            Assert.AreEqual(new BlockAck { Action = 9, Ok = true }, Wire.DecodeBlockAck(b, b.Length));
            b = Bytes(golden["block_ack_refused"]);
            Assert.AreEqual(new BlockAck { Action = 10, Ok = false }, Wire.DecodeBlockAck(b, b.Length));

            b = Bytes(golden["state"]);
            var transforms = new List<Transform>();
            Assert.AreEqual(77u, Wire.DecodeState(b, b.Length, transforms));
            CollectionAssert.AreEqual(TheTransforms, transforms);
            b = Bytes(golden["state_empty"]);
            Assert.AreEqual(0u, Wire.DecodeState(b, b.Length, transforms));
            Assert.AreEqual(0, transforms.Count, "the destination list is cleared");

            b = Bytes(golden["block_changes"]);
            var changes = new List<BlockChange>();
            Assert.AreEqual(5u, Wire.DecodeBlockChanges(b, b.Length, changes));
            CollectionAssert.AreEqual(TheChanges, changes);

            b = Bytes(golden["keepalive"]);
            Assert.AreEqual(8u, Wire.DecodeKeepalive(b, b.Length));
        }

        [Test]
        public void EveryGoldenMalformedMessageIsRefusedWithItsKind()
        {
            Load();
            Assert.GreaterOrEqual(malformed.Count, 15);
            foreach (var kv in malformed)
            {
                string[] parts = kv.Value.Split('/');
                byte[] b = Bytes(parts[0]);
                var e = Assert.Throws<WireException>(() => Wire.Validate(b, b.Length), kv.Key);
                Assert.AreEqual(parts[1], e.Kind.ToString().ToLowerInvariant(), kv.Key + ": " + e.Message);
            }
        }

        [Test]
        public void TheLengthNotTheBufferBoundsTheMessage()
        {
            // Transports hand over a reused buffer and a length: bytes past the length are not the message.
            var buf = new WireBuffer();
            Wire.AppendKeepalive(buf, 8);
            byte[] big = new byte[64];
            Buffer.BlockCopy(buf.Data, 0, big, 0, buf.Length);
            Assert.AreEqual(8u, Wire.DecodeKeepalive(big, buf.Length));
            var e = Assert.Throws<WireException>(() => Wire.DecodeKeepalive(big, 4));
            Assert.AreEqual(WireError.Short, e.Kind);
            Assert.Throws<WireException>(() => Wire.Validate(buf.Data, 0));
            Assert.Throws<WireException>(() => Wire.Validate(null, 3));
            Assert.Throws<WireException>(() => Wire.Validate(new byte[] { Wire.TKeepalive, 0, 0, 0, 1 }, 6),
                "a length beyond the buffer is refused, not read");
            Assert.Throws<WireException>(() => Wire.DecodeProbe(new byte[] { Wire.TProbe }, 18));
        }

        [Test]
        public void ADecoderOfAnotherTypeRefusesTheMessage()
        {
            var buf = new WireBuffer();
            Wire.AppendHello(buf, new Hello { Player = 1, Schema = 1 });
            var e = Assert.Throws<WireException>(() => Wire.DecodeKeepalive(buf.Data, buf.Length));
            Assert.AreEqual(WireError.Short, e.Kind, "as wire.go: a wrong type byte is reported as too short");
        }

        [Test]
        public void NoInputThrowsAnythingButWireException()
        {
            // A deterministic random sweep standing in for Go's fuzzing: every decoder through
            // Validate, lengths 0..64, type bytes biased to the real ones.
            var rng = new Rng(12345);
            var b = new byte[64];
            int valid = 0;
            for (int i = 0; i < 200000; i++)
            {
                int n = rng.NextInt(b.Length + 1);
                for (int j = 0; j < n; j++)
                {
                    b[j] = (byte)rng.NextInt(256);
                }
                if (n > 0 && rng.NextInt(4) > 0)
                {
                    b[0] = (byte)(1 + rng.NextInt(12));
                }
                if (n > 6 && (b[0] == Wire.TState || b[0] == Wire.TBlockChanges) && rng.NextInt(2) == 0)
                {
                    b[5] = 0; // small counts, so that some lists decode
                    b[6] = (byte)rng.NextInt(4);
                }
                try
                {
                    Wire.Validate(b, n);
                    valid++;
                }
                catch (WireException)
                {
                }
            }
            Assert.Greater(valid, 1000, "the sweep reaches valid messages too");
        }

        [Test]
        public void ProbePaddingAndReEncoding()
        {
            var buf = new WireBuffer();
            Wire.AppendProbe(buf, Wire.TProbe, TheProbe, 400);
            Assert.AreEqual(400, buf.Length);
            Probe p = Wire.DecodeProbe(buf.Data, buf.Length);
            // The server echoes by rewriting the type byte only; the header must re-encode identically.
            var again = new WireBuffer();
            Wire.AppendProbe(again, Wire.TProbe, p, 0);
            Assert.AreEqual(Wire.ProbeHeaderBytes, again.Length);
            for (int i = 0; i < again.Length; i++)
            {
                Assert.AreEqual(buf.Data[i], again.Data[i], "byte " + i);
            }
            for (int i = Wire.ProbeHeaderBytes; i < 400; i++)
            {
                Assert.AreEqual(0, buf.Data[i], "padding byte " + i);
            }
        }

        [Test]
        public void FloatBitsRoundTrip()
        {
            foreach (float f in new[] { 0f, -0f, 1.5f, -3f, float.Epsilon, float.MaxValue, float.NaN, float.NegativeInfinity })
            {
                uint bits = Wire.SingleToBits(f);
                Assert.AreEqual(BitConverter.ToUInt32(BitConverter.GetBytes(f), 0), bits);
                Assert.AreEqual(bits, Wire.SingleToBits(Wire.BitsToSingle(bits)));
            }
            Assert.AreEqual(0x3fc00000u, Wire.SingleToBits(1.5f));
        }

        [Test]
        public void BufferClearKeepsStorage()
        {
            var buf = new WireBuffer(16);
            Wire.AppendProbe(buf, Wire.TProbe, TheProbe, 100);
            byte[] storage = buf.Data;
            buf.Clear();
            Assert.AreEqual(0, buf.Length);
            Wire.AppendKeepalive(buf, 1);
            Assert.AreSame(storage, buf.Data);
            CollectionAssert.AreEqual(new byte[] { 11, 0, 0, 0, 1 }, buf.ToArray());
            Assert.Throws<ArgumentOutOfRangeException>(() => buf.SetUInt16(4, 1));
        }
    }
}
