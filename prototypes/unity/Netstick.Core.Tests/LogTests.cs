using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Threading;
using NUnit.Framework;

namespace Netstick.Core.Tests
{
    [TestFixture]
    public class LogTests
    {
        private string dir;

        [SetUp]
        public void SetUp()
        {
            dir = TestFiles.TempDir();
        }

        [TearDown]
        public void TearDown()
        {
            Directory.Delete(dir, true);
        }

        private static string[] ReadLines(string path)
        {
            // FileShare.ReadWrite: the log may still be open for writing (the abandoned-process case).
            using (var fs = new FileStream(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite))
            using (var r = new StreamReader(fs))
            {
                string text = r.ReadToEnd();
                Assert.IsTrue(text.EndsWith("\n"), "the file ends with a whole line: " + path);
                return text.Substring(0, text.Length - 1).Split('\n');
            }
        }

        [Test]
        public void HeadersAreTheContractsColumns()
        {
            // prototypes/contract/columns.py; tests/python/e2e/toolchain/test_csharp_core.py checks these against it.
            Assert.AreEqual("t_unix_ns,player,seq,rtt_us,kind,send_late_us", RttLog.Columns);
            Assert.AreEqual("t_unix_ns,player,event,value,detail", EventLog.Columns);
            Assert.AreEqual("t_unix_ns,tick,tick_late_us,tick_duration_us,players_connected,networked_objects,"
                + "msgs_in,msgs_out,bytes_in,bytes_out", TickLog.Columns);
        }

        [Test]
        public void FilesAreNamedByProcAndStartWithTheHeader()
        {
            using (RttLog rtt = RttLog.Create(dir, "client-100"))
            using (EventLog ev = EventLog.Create(dir, "client-100"))
            using (TickLog ticks = TickLog.Create(dir))
            {
                Assert.AreEqual(Path.Combine(dir, "client-100.rtt.csv"), rtt.Path);
                Assert.AreEqual(Path.Combine(dir, "client-100.events.csv"), ev.Path);
                Assert.AreEqual(Path.Combine(dir, "server.ticks.csv"), ticks.Path);
                // The header is on disk at once, before any row or flush.
                CollectionAssert.AreEqual(new[] { RttLog.Columns }, ReadLines(rtt.Path));
                CollectionAssert.AreEqual(new[] { EventLog.Columns }, ReadLines(ev.Path));
                CollectionAssert.AreEqual(new[] { TickLog.Columns }, ReadLines(ticks.Path));
            }
        }

        [Test]
        public void RowsAreFormattedAsTheReferenceWritesThem()
        {
            string rttPath, evPath, tickPath;
            using (RttLog rtt = RttLog.Create(dir, "client-0"))
            using (EventLog ev = EventLog.Create(dir, "client-0"))
            using (TickLog ticks = TickLog.Create(dir))
            {
                rtt.Write(1700000000123456789L, 3, 7, 152.25, "net", 12.5);
                rtt.Write(1700000000123456790L, 4, 0, 1234.5678, "lib", null);
                ev.Write(1700000000000000001L, null, "listen", "", "addr=127.0.0.1:7777");
                ev.Write(1700000000000000002L, 5, "connect", EventLog.Number(12.3456, 3), "");
                ev.Write(1700000000000000003L, 5, "error", "", "error=a,b\nc d");
                ticks.Write(1700000000000000004L, 42, 10.0004, 250.5, 2, 12, 3, 4, 100, 200);
                rttPath = rtt.Path;
                evPath = ev.Path;
                tickPath = ticks.Path;
            }
            CollectionAssert.AreEqual(new[]
            {
                RttLog.Columns,
                "1700000000123456789,3,7,152.250,net,12.500",
                "1700000000123456790,4,0,1234.568,lib,",
            }, ReadLines(rttPath));
            CollectionAssert.AreEqual(new[]
            {
                EventLog.Columns,
                "1700000000000000001,,listen,,addr=127.0.0.1:7777",
                "1700000000000000002,5,connect,12.346,",
                "1700000000000000003,5,error,,error=a_b_c d",
            }, ReadLines(evPath));
            CollectionAssert.AreEqual(new[]
            {
                TickLog.Columns,
                "1700000000000000004,42,10.000,250.500,2,12,3,4,100,200",
            }, ReadLines(tickPath));
        }

        [Test]
        public void SanitizeMakesOneDetailValue()
        {
            Assert.AreEqual("connection_reset__by_peer", LineLog.Sanitize("connection reset, by peer"));
            Assert.AreEqual("a_b_c_d_e", LineLog.Sanitize("a b,c\nd\re"));
            Assert.AreEqual("", LineLog.Sanitize(null));
        }

        [Test]
        public void NumbersAreCultureInvariant()
        {
            CultureInfo saved = Thread.CurrentThread.CurrentCulture;
            string path;
            try
            {
                // de-DE writes 1.234,5 for 1234.5: a comma inside a field would break every CSV row.
                Thread.CurrentThread.CurrentCulture = new CultureInfo("de-DE");
                Assert.AreEqual("1,5", 1.5.ToString(CultureInfo.CurrentCulture), "de-DE writes a decimal comma");
                using (RttLog rtt = RttLog.Create(dir, "client-0"))
                {
                    rtt.Write(1, 0, 0, 1234.5, "app", 0.25);
                    path = rtt.Path;
                }
                using (TickLog ticks = TickLog.Create(dir))
                {
                    ticks.Write(2, 1, 1234.5, 0.5, 0, 0, 0, 0, 0, 0);
                }
                Assert.AreEqual("1.5", EventLog.Number(1.5, 1));
                Assert.AreEqual("\"x\":1.5", Json.Serialize(new Dictionary<string, object> { { "x", 1.5 } }).Trim('{', '}'));
            }
            finally
            {
                Thread.CurrentThread.CurrentCulture = saved;
            }
            Assert.AreEqual("1,0,0,1234.500,app,0.250", ReadLines(path)[1]);
            Assert.AreEqual("2,1,1234.500,0.500,0,0,0,0,0,0", ReadLines(Path.Combine(dir, "server.ticks.csv"))[1]);
        }

        [Test]
        public void AnAbandonedLogHoldsOnlyWholeLines()
        {
            // A process killed without Close: what is on disk is the header and whole rows only, and
            // rows older than the flush period are on disk once FlushIfDue ran (the host's loop).
            RttLog rtt = RttLog.Create(dir, "client-0");
            for (int i = 0; i < 1000; i++)
            {
                rtt.Write(1000 + i, i % 7, i, 100.0 + i, "net", 1.0);
            }
            Thread.Sleep((int)(LineLog.FlushPeriodNs / 1000000) + 20);
            rtt.FlushIfDue();
            for (int i = 1000; i < 1500; i++)
            {
                rtt.Write(1000 + i, i % 7, i, 100.0 + i, "net", 1.0);
            }
            string[] lines = ReadLines(rtt.Path);
            Assert.AreEqual(RttLog.Columns, lines[0]);
            Assert.GreaterOrEqual(lines.Length, 1001, "rows older than the flush period are on disk");
            for (int i = 1; i < lines.Length; i++)
            {
                Assert.AreEqual(5, lines[i].Split(',').Length - 1, "line " + i + ": " + lines[i]);
                StringAssert.StartsWith((1000 + i - 1).ToString(CultureInfo.InvariantCulture) + ",", lines[i]);
            }
            rtt.Close();
            Assert.AreEqual(1501, ReadLines(rtt.Path).Length, "Close writes the rest");
        }

        [Test]
        public void AWriteAfterTheFlushPeriodFlushesByItself()
        {
            using (EventLog ev = EventLog.Create(dir, "server"))
            {
                ev.Write(1, null, "listen", "", "addr=x");
                Assert.AreEqual(1, ReadLines(ev.Path).Length, "buffered, not yet written");
                Thread.Sleep((int)(LineLog.FlushPeriodNs / 1000000) + 20);
                ev.Write(2, null, "join", "", "remote=y");
                Assert.AreEqual(3, ReadLines(ev.Path).Length, "the row that found the buffer due flushed it");
            }
        }

        [Test]
        public void FlushPeriodIsWithinTheContractsHalfSecond()
        {
            Assert.LessOrEqual(LineLog.FlushPeriodNs, 500000000L);
        }

        [Test]
        public void RowsFromManyThreadsAreWholeLines()
        {
            const int threads = 8, rows = 2000;
            RttLog rtt = RttLog.Create(dir, "client-0");
            var workers = new List<Thread>();
            for (int t = 0; t < threads; t++)
            {
                int id = t;
                var th = new Thread(() =>
                {
                    for (int i = 0; i < rows; i++)
                    {
                        rtt.Write(i, id, i, 1.5, "net", null);
                        if (i % 250 == 0)
                        {
                            rtt.Flush();
                        }
                    }
                });
                workers.Add(th);
                th.Start();
            }
            foreach (Thread th in workers)
            {
                th.Join();
            }
            rtt.Close();
            string[] lines = ReadLines(rtt.Path);
            Assert.AreEqual(threads * rows + 1, lines.Length);
            for (int i = 1; i < lines.Length; i++)
            {
                Assert.AreEqual(6, lines[i].Split(',').Length, "torn line " + i + ": " + lines[i]);
            }
        }

        [Test]
        public void RowsAfterCloseAreDropped()
        {
            var ev = EventLog.Create(dir, "server");
            ev.Close();
            ev.Write(1, null, "late", "", "");
            ev.Close();
            Assert.AreEqual(1, ReadLines(ev.Path).Length);
        }

        [Test]
        public void AnUncreatableLogDirIsExit6()
        {
            string file = Path.Combine(dir, "a-file");
            File.WriteAllText(file, "not a directory");
            var e = Assert.Throws<LogDirException>(() => LineLog.EnsureDirectory(Path.Combine(file, "logs")));
            Assert.AreEqual(ExitCode.LogDir, e.ExitCode);
            StringAssert.Contains("-log-dir", e.Message);
            Assert.Throws<LogDirException>(() => RttLog.Create(Path.Combine(file, "logs"), "client-0"));
            Assert.Throws<LogDirException>(() => TickLog.Create(Path.Combine(dir, "missing")));
            Assert.Throws<LogDirException>(() => MetaFile.Create(file, "server").Write());
        }

        [Test]
        public void EnsureDirectoryCreatesParents()
        {
            string nested = Path.Combine(dir, "a", "b", "c");
            LineLog.EnsureDirectory(nested);
            LineLog.EnsureDirectory(nested);
            Assert.IsTrue(Directory.Exists(nested));
        }

        [Test]
        public void AFailingWriteIsExit6()
        {
            if (!File.Exists("/dev/full"))
            {
                Assert.Ignore("needs /dev/full (Linux)");
            }
            // /dev/full opens and fails every write (ENOSPC): the header's flush records the error
            // as any later flush does, and creation reports it.
            var e = Assert.Throws<LogDirException>(() => new RttLog("/dev/full"));
            StringAssert.Contains("/dev/full", e.Message);
            Assert.AreEqual(ExitCode.LogDir, e.ExitCode);
        }
    }
}
