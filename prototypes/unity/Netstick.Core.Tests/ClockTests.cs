using System;
using System.Threading;
using NUnit.Framework;

namespace Netstick.Core.Tests
{
    [TestFixture]
    public class ClockTests
    {
        [Test]
        public void MonotonicNanoseconds()
        {
            long a = Clock.MonoNs();
            Thread.Sleep(20);
            long b = Clock.MonoNs();
            Assert.That(b - a, Is.InRange(15000000L, 2000000000L), "20 ms sleep in ns");
        }

        [Test]
        public void WallClockIsUnixNanoseconds()
        {
            long unixNs = (DateTime.UtcNow - new DateTime(1970, 1, 1, 0, 0, 0, DateTimeKind.Utc)).Ticks * 100;
            Assert.That(Math.Abs(Clock.WallNs() - unixNs), Is.LessThan(1000000000L), "within a second of DateTime.UtcNow");
            long m = Clock.MonoNs();
            Assert.AreEqual(Clock.WallNsAt(m) + 1000, Clock.WallNsAt(m + 1000));
        }

        [Test]
        public void WallClockNeverGoesBack()
        {
            long prev = Clock.WallNs();
            for (int i = 0; i < 100000; i++)
            {
                long now = Clock.WallNs();
                Assert.GreaterOrEqual(now, prev);
                prev = now;
            }
        }
    }

    [TestFixture]
    public class ShutdownTests
    {
        [TearDown]
        public void TearDown()
        {
            Shutdown.Reset();
        }

        [Test]
        public void TheFirstReasonWins()
        {
            Shutdown.Reset();
            Assert.IsFalse(Shutdown.IsRequested);
            Assert.IsNull(Shutdown.Reason);
            var t = new Thread(() => Shutdown.Request("SIGTERM"));
            t.Start();
            t.Join();
            Shutdown.Request("SIGINT");
            Assert.IsTrue(Shutdown.IsRequested);
            Assert.AreEqual("SIGTERM", Shutdown.Reason);
        }

        [Test]
        public void ExitCodesAreTheContracts()
        {
            Assert.AreEqual(new[] { 0, 1, 2, 3, 4, 5, 6 }, new[]
            {
                ExitCode.Ok, ExitCode.Internal, ExitCode.BadArgs, ExitCode.Bind, ExitCode.Connect, ExitCode.Lost, ExitCode.LogDir,
            });
            Assert.AreEqual(3, new BindException("bind 127.0.0.1:7777: in use").ExitCode);
            Assert.AreEqual(6, new LogDirException("x").ExitCode);
        }
    }
}
