using System;
using System.Collections.Generic;
using System.Threading;
using Mono.Unix;
using Mono.Unix.Native;
using Netstick.Core;

namespace Netstick.Mono
{
    /// <summary>
    /// netstick-mono: the Netstick game (prototypes/CONTRACT.md) on Netstick.Core, hosted by mono over
    /// System.Net.Sockets (tcp, udp). The host only parses the options, picks the transport, runs
    /// ServerCore or ClientCore in a loop that blocks on the transport's sockets between steps, prints the
    /// READY and CONNECTED lines, turns SIGTERM/SIGINT into a stop, and exits with the contract's code.
    /// </summary>
    public static class Program
    {
        /// <summary>The prototype's name in meta.json.</summary>
        public const string Prototype = "mono";

        /// <summary>
        /// Longest wait between two steps: signals are checked at least this often (a signal handled on
        /// another thread does not interrupt the wait), well inside the contract's 2 s to exit.
        /// </summary>
        private const long MaxWaitNs = 50000000L;

        public static OptionsSpec Spec()
        {
            return new OptionsSpec(Prototype, "tcp", "tcp", "udp");
        }

        public static int Main(string[] args)
        {
            var argv = new string[args.Length + 1];
            argv[0] = "netstick-mono";
            Array.Copy(args, 0, argv, 1, args.Length);
            try
            {
                return Run(argv);
            }
            catch (NetstickException e)
            {
                Console.Error.WriteLine("netstick-mono: " + e.Message);
                return e.ExitCode;
            }
            catch (Exception e)
            {
                Console.Error.WriteLine("netstick-mono: internal error: " + e);
                return Netstick.Core.ExitCode.Internal;
            }
        }

        private static object NewTransport(Options o)
        {
            bool server = o.Role == "server";
            switch (o.Transport)
            {
                case "tcp":
                    return server ? (object)new TcpServerTransport(o.TransportOptions) : new TcpClientTransport(o.TransportOptions);
                case "udp":
                    return server ? (object)new UdpServerTransport(o.TransportOptions) : new UdpClientTransport(o.TransportOptions);
                default:
                    throw new UsageException("-transport \"" + o.Transport + "\": expected tcp or udp");
            }
        }

        private static int Run(string[] argv)
        {
            Options o = Options.Parse(argv, Spec());
            object transport = NewTransport(o);
            LineLog.EnsureDirectory(o.LogDir);
            var ts = transport as IServerTransport;
            var tc = transport as IClientTransport;
            MetaFile meta = MetaFile.Create(o.LogDir, o.Proc);
            meta.Values["message_limits"] = (ts != null ? ts.Limits : tc.Limits).MetaValue();
            meta.WriteStart(o, Prototype, ts != null ? ts.LibraryVersions : tc.LibraryVersions,
                ts != null ? ts.EffectiveChannels : tc.EffectiveChannels);
            Poller.PreciseTimers();
            var signals = new[] { new UnixSignal(Signum.SIGTERM), new UnixSignal(Signum.SIGINT) };
            EventLog events = EventLog.Create(o.LogDir, o.Proc);
            int code;
            string reason;
            var logs = new List<LineLog> { events };
            try
            {
                if (ts != null)
                {
                    TickLog ticks = TickLog.Create(o.LogDir);
                    logs.Add(ticks);
                    RunServer(o, ts, events, ticks, signals, out code, out reason);
                }
                else
                {
                    RttLog rtt = RttLog.Create(o.LogDir, o.Proc);
                    logs.Add(rtt);
                    RunClient(o, tc, rtt, events, signals, out code, out reason);
                }
            }
            catch (BindException e)
            {
                code = e.ExitCode;
                reason = e.Message;
            }
            foreach (LineLog log in logs)
            {
                try
                {
                    log.Close();
                }
                catch (LogDirException e)
                {
                    if (code == Netstick.Core.ExitCode.Ok)
                    {
                        code = e.ExitCode;
                        reason = e.Message;
                    }
                }
            }
            if (code != Netstick.Core.ExitCode.Ok)
            {
                Console.Error.WriteLine("netstick-mono: " + reason);
            }
            meta.WriteExit(code, reason);
            return code;
        }

        /// <summary>
        /// The stop request, if any: a SIGTERM or SIGINT that arrived (mono's UnixSignal records it from its
        /// own handler; the loop looks at least every <see cref="MaxWaitNs"/>) becomes the core's Shutdown.
        /// </summary>
        private static string Signalled(UnixSignal[] signals)
        {
            foreach (UnixSignal s in signals)
            {
                if (s.IsSet)
                {
                    Shutdown.Request("signal " + s.Signum);
                }
            }
            return Shutdown.Reason;
        }

        private static void WaitOn(object transport, long ns)
        {
            var w = transport as IWaitable;
            long wait = Math.Min(Math.Max(ns, 0), MaxWaitNs);
            if (w != null)
            {
                w.Wait(wait);
            }
            else if (wait > 0)
            {
                Thread.Sleep(TimeSpan.FromTicks(wait / 100));
            }
        }

        private static void RunServer(Options o, IServerTransport transport, EventLog events, TickLog ticks,
            UnixSignal[] signals, out int code, out string reason)
        {
            var core = new ServerCore(o, transport, events, ticks);
            core.Start();
            var bound = transport as TcpServerTransport;
            var boundUdp = transport as UdpServerTransport;
            string addr = bound != null ? bound.Addr : boundUdp != null ? boundUdp.Addr : o.Addr;
            Console.Out.WriteLine(Lines.Ready(o.Transport, addr, System.Diagnostics.Process.GetCurrentProcess().Id));
            Console.Out.Flush();
            string stop = null;
            while (stop == null && !core.Finished)
            {
                long wait = core.Step(Clock.MonoNs());
                stop = Signalled(signals);
                if (stop == null && !core.Finished)
                {
                    WaitOn(transport, wait);
                }
            }
            // A stopping server closes every connection, so its clients notice at once.
            core.Stop(stop ?? "duration elapsed");
            code = Netstick.Core.ExitCode.Ok;
            reason = stop != null ? "stopped: " + stop : "finished";
        }

        private static void RunClient(Options o, IClientTransport transport, RttLog rtt, EventLog events,
            UnixSignal[] signals, out int code, out string reason)
        {
            var core = new ClientCore(o, transport, rtt, events);
            core.Start();
            bool printed = false;
            bool stopping = false;
            while (!core.Finished)
            {
                if (!stopping)
                {
                    string stop = Signalled(signals);
                    if (stop != null)
                    {
                        stopping = true;
                        core.Stop(stop);
                        continue;
                    }
                }
                long wait = core.Step(Clock.MonoNs());
                if (core.AllConnected && !printed)
                {
                    printed = true;
                    Console.Out.WriteLine(Lines.Connected(o.Players, o.FirstPlayer, core.ConnectS));
                    Console.Out.Flush();
                }
                if (!core.Finished)
                {
                    WaitOn(transport, wait);
                }
            }
            code = core.ExitCode;
            reason = core.ExitReason;
        }
    }
}
