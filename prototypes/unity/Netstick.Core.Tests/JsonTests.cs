using System;
using System.Collections.Generic;
using System.IO;
using NUnit.Framework;

namespace Netstick.Core.Tests
{
    [TestFixture]
    public class JsonTests
    {
        [TestCase("plain", "\"plain\"")]
        [TestCase("q\"b\\s/", "\"q\\\"b\\\\s/\"")]
        [TestCase("n\nr\rt\tb\bf\f", "\"n\\nr\\rt\\tb\\bf\\f\"")]
        [TestCase("\u0001\u001f", "\"\\u0001\\u001f\"")]
        [TestCase("\u2028\u2029", "\"\\u2028\\u2029\"")]
        [TestCase("é€😀", "\"é€😀\"")]
        [TestCase("", "\"\"")]
        public void StringsAreEscaped(string value, string json)
        {
            Assert.AreEqual(json, Json.Serialize(value));
            Assert.AreEqual(json, Json.Quote(value));
        }

        [Test]
        public void Scalars()
        {
            Assert.AreEqual("null", Json.Serialize(null));
            Assert.AreEqual("true", Json.Serialize(true));
            Assert.AreEqual("false", Json.Serialize(false));
            Assert.AreEqual("-42", Json.Serialize(-42));
            Assert.AreEqual("18446744073709551615", Json.Serialize(ulong.MaxValue));
            Assert.AreEqual("-9223372036854775808", Json.Serialize(long.MinValue));
            Assert.AreEqual("0.1", Json.Serialize(0.1));
            Assert.AreEqual("100", Json.Serialize(100.0));
            Assert.AreEqual("1E+300", Json.Serialize(1e300));
            Assert.AreEqual("0.5", Json.Serialize(0.5f));
            Assert.AreEqual("null", Json.Serialize(double.NaN), "JSON has no NaN");
            Assert.AreEqual("null", Json.Serialize(double.PositiveInfinity));
        }

        [Test]
        public void ObjectsAndArrays()
        {
            var d = new SortedDictionary<string, object>(StringComparer.Ordinal)
            {
                { "args", new[] { "prog", "-role", "server" } },
                { "empty", new Dictionary<string, string>() },
                { "none", new int[0] },
                { "params", new Dictionary<string, string> { { "size", "400" } } },
                { "seed", 7UL },
            };
            Assert.AreEqual("{\"args\":[\"prog\",\"-role\",\"server\"],\"empty\":{},\"none\":[],"
                + "\"params\":{\"size\":\"400\"},\"seed\":7}", Json.Serialize(d));
            Assert.AreEqual("{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}",
                Json.Serialize(new SortedDictionary<string, object> { { "a", new List<int> { 1, 2 } }, { "b", new Dictionary<string, int>() } }, true));
        }

        [Test]
        public void UnsupportedValuesAreRefused()
        {
            Assert.Throws<ArgumentException>(() => Json.Serialize(new object()));
            Assert.Throws<ArgumentException>(() => Json.Serialize(new Dictionary<int, int> { { 1, 2 } }));
        }

        [Test]
        public void MetaFileHasTheContractsKeysAndIsRewrittenAtExit()
        {
            string dir = TestFiles.TempDir();
            try
            {
                string logDir = Path.Combine(dir, "created", "by-meta");
                Options o = Options.Parse(new[] { "netstick-mono", "-role", "client", "-log-dir", logDir, "-first-player", "4",
                    "-workload", "stream", "-param", "t.mtu=900", "-seed", "9", "-run-id", "r\"1" },
                    new OptionsSpec("mono", "udp"));
                MetaFile meta = MetaFile.Create(o.LogDir, o.Proc);
                Assert.AreEqual(Path.Combine(logDir, "client-4.meta.json"), meta.Path);
                meta.WriteStart(o, "mono", new Dictionary<string, string> { { "mono", "6.8.0" } },
                    new Dictionary<string, string> { { "reliable", "reliable" }, { "unreliable", "unreliable" } },
                    new Dictionary<string, object> { { "extra_key", 1 } });
                string start = File.ReadAllText(meta.Path);
                foreach (string key in new[] { "schema", "role", "prototype", "transport", "library_versions", "args",
                    "workload", "params", "transport_options", "effective_channels", "run_id", "seed", "pid", "host",
                    "start_unix_ns", "status", "extra_key" })
                {
                    StringAssert.Contains("\"" + key + "\": ", start, key);
                }
                StringAssert.Contains("\"status\": \"running\"", start);
                StringAssert.Contains("\"run_id\": \"r\\\"1\"", start);
                StringAssert.Contains("\"seed\": 9,", start);
                StringAssert.Contains("\"mtu\": \"900\"", start);
                StringAssert.Contains("\"size\": \"400\"", start);
                StringAssert.DoesNotContain("end_unix_ns", start);

                meta.WriteExit(5, "server lost: connection reset");
                string end = File.ReadAllText(meta.Path);
                StringAssert.Contains("\"status\": \"exited\"", end);
                StringAssert.Contains("\"exit_code\": 5", end);
                StringAssert.Contains("\"exit_reason\": \"server lost: connection reset\"", end);
                StringAssert.Contains("\"end_unix_ns\": ", end);
                Assert.AreEqual(1, Directory.GetFiles(logDir).Length, "no temporary file is left");
            }
            finally
            {
                Directory.Delete(dir, true);
            }
        }
    }
}
