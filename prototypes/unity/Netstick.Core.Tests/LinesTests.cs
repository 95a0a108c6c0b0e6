using System.Globalization;
using System.Text.RegularExpressions;
using System.Threading;
using NUnit.Framework;

namespace Netstick.Core.Tests
{
    [TestFixture]
    public class LinesTests
    {
        // The exact grammar of prototypes/contract/lines.py (READY_RE, CONNECTED_RE), anchored as
        // re.fullmatch; tests/python/e2e/toolchain/test_csharp_core.py parses the same lines with lines.py itself.
        private static readonly Regex ReadyRe = new Regex(
            @"^NETSTICK READY role=(?<role>\S+) transport=(?<transport>\S+) "
            + @"addr=(?<host>\S+):(?<port>[0-9]+) pid=(?<pid>[0-9]+) schema=(?<schema>[0-9]+)$");
        private static readonly Regex ConnectedRe = new Regex(
            @"^NETSTICK CONNECTED players=(?<players>[0-9]+) first=(?<first>[0-9]+) "
            + @"connect_s=(?<connect_s>[0-9]+(?:\.[0-9]+)?)$");

        [Test]
        public void ReadyIsTheContractsLine()
        {
            string line = Lines.Ready("udp", "127.0.0.1:7777", 4242);
            Assert.AreEqual("NETSTICK READY role=server transport=udp addr=127.0.0.1:7777 pid=4242 schema=1", line);
            Match m = ReadyRe.Match(line);
            Assert.IsTrue(m.Success);
            Assert.AreEqual("7777", m.Groups["port"].Value);
            Assert.AreEqual(line, Lines.Ready("udp", "127.0.0.1", 7777, 4242));
        }

        [Test]
        public void ConnectedIsTheContractsLine()
        {
            string line = Lines.Connected(50, 100, 1.23456);
            Assert.AreEqual("NETSTICK CONNECTED players=50 first=100 connect_s=1.2346", line);
            Assert.IsTrue(ConnectedRe.IsMatch(line));
        }

        [TestCase(0.0)]
        [TestCase(1e-9)]
        [TestCase(12345.5)]
        [TestCase(-0.0)]
        [TestCase(-3.0)]
        [TestCase(double.NaN)]
        [TestCase(double.PositiveInfinity)]
        public void ConnectedAlwaysMatchesTheGrammar(double connectS)
        {
            string line = Lines.Connected(1, 0, connectS);
            Assert.IsTrue(ConnectedRe.IsMatch(line), line);
        }

        [Test]
        public void LinesAreCultureInvariant()
        {
            CultureInfo saved = Thread.CurrentThread.CurrentCulture;
            try
            {
                Thread.CurrentThread.CurrentCulture = new CultureInfo("de-DE");
                Assert.AreEqual("NETSTICK CONNECTED players=1000 first=0 connect_s=1234.5000", Lines.Connected(1000, 0, 1234.5));
                Assert.AreEqual("NETSTICK READY role=server transport=tcp addr=h:1 pid=12345 schema=1", Lines.Ready("tcp", "h:1", 12345));
            }
            finally
            {
                Thread.CurrentThread.CurrentCulture = saved;
            }
        }
    }
}
