using System.Collections.Generic;
using NUnit.Framework;

namespace Netstick.Core.Tests
{
    [TestFixture]
    public class ScheduleTests
    {
        /// <summary>Records when it fired and repeats every period, count times.</summary>
        private sealed class Periodic : IScheduledTask
        {
            public readonly List<long> Due = new List<long>();
            public readonly List<long> Ran = new List<long>();
            private readonly long period;
            private int left;

            public Periodic(long period, int count)
            {
                this.period = period;
                left = count;
            }

            public bool Fire(long dueNs, long nowNs, out long nextDueNs)
            {
                Due.Add(dueNs);
                Ran.Add(nowNs);
                nextDueNs = Schedule.NextDue(dueNs, period, nowNs);
                return --left > 0;
            }
        }

        [Test]
        public void NothingRunsBeforeItIsDueAndTheSlackOnlyDelaysTheWakeUp()
        {
            long now = 1000;
            var s = new Schedule(100);
            var t = new Periodic(1000, 3);
            s.Add(2000, t);
            Assert.AreEqual(2000, s.NextDueNs);
            Assert.AreEqual(2100, s.WakeNs);
            Assert.AreEqual(0, s.RunDue(() => now));
            now = 1999;
            Assert.AreEqual(0, s.RunDue(() => now));
            now = 2050;
            Assert.AreEqual(1, s.RunDue(() => now));
            CollectionAssert.AreEqual(new[] { 2000L }, t.Due);
            Assert.AreEqual(3000, s.NextDueNs);
        }

        [Test]
        public void LatenessDoesNotAccumulateAndAStallSkipsMissedRuns()
        {
            Assert.AreEqual(2000, Schedule.NextDue(1000, 1000, 1900)); // late but within a period: keep the grid
            // Stalled 4.5 periods: one overdue run at 5000 (the grid point in the last period), not four in a burst.
            Assert.AreEqual(5000, Schedule.NextDue(1000, 1000, 5500));
            long next = Schedule.NextDue(1000, 1000, 5500);
            Assert.AreEqual(0, next % 1000);
            Assert.GreaterOrEqual(next, 5500 - 1000);
        }

        [Test]
        public void TasksRunInDeadlineOrderTiesInTheOrderAdded()
        {
            var order = new List<string>();
            var s = new Schedule(0);
            s.Add(30, new Named("c", order));
            s.Add(10, new Named("a", order));
            s.Add(30, new Named("d", order));
            s.Add(20, new Named("b", order));
            Assert.AreEqual(4, s.RunDue(() => 100));
            CollectionAssert.AreEqual(new[] { "a", "b", "c", "d" }, order);
            Assert.AreEqual(0, s.Count);
            Assert.AreEqual(long.MaxValue, s.WakeNs);
        }

        private sealed class Named : IScheduledTask
        {
            private readonly string name;
            private readonly List<string> order;

            public Named(string name, List<string> order)
            {
                this.name = name;
                this.order = order;
            }

            public bool Fire(long dueNs, long nowNs, out long nextDueNs)
            {
                order.Add(name);
                nextDueNs = 0;
                return false;
            }
        }

        [Test]
        public void PhasesAreSeededAndWithinTheFirstPeriod()
        {
            var a = new Rng(7, 3);
            var b = new Rng(7, 3);
            for (int i = 0; i < 100; i++)
            {
                long pa = Schedule.Phase(a, 5000, 1000);
                Assert.AreEqual(pa, Schedule.Phase(b, 5000, 1000));
                Assert.That(pa, Is.InRange(5000L, 5999L));
            }
            Assert.AreEqual(42, Schedule.Phase(new Rng(1), 42, 0));
        }
    }
}
