using System;
using Netstick.Core;
using UnityEngine;

namespace Netstick.Unity
{
    /// <summary>
    /// The host of Netstick.Core inside a Unity player, the same for every library: parses the
    /// contract's command line, fixes the frame rate (vSyncCount 0, an explicit targetFrameRate),
    /// lets the library's adapter set its tick and send rates and create its connections, drives
    /// ServerCore or ClientCore from Update, prints READY and CONNECTED, and turns a quit request
    /// (SIGTERM, SIGINT, Application.Quit) into the core's orderly stop before the player exits
    /// with the contract's exit code. A library's bootstrap only names its adapter.
    /// </summary>
    public abstract class NetstickHost : MonoBehaviour
    {
        private Options options;
        private ServerCore server;
        private ClientCore client;
        private MetaFile meta;
        private LineLog[] logs = new LineLog[0];
        private bool connectedPrinted;
        private bool stopping;
        private bool finished;
        private bool quitAllowed;

        /// <summary>The library's adapter; called once, in Awake.</summary>
        protected abstract ILibraryAdapter CreateAdapter();

        protected virtual void Awake()
        {
            DontDestroyOnLoad(gameObject);
            ProcessOutput.Route();
            Application.runInBackground = true;
            Application.wantsToQuit += WantsToQuit;
            Application.quitting += OnQuitting;
            Run(Begin);
        }

        protected virtual void Update()
        {
            if (!finished)
            {
                Run(Step);
            }
        }

        private void Begin()
        {
            ILibraryAdapter adapter = CreateAdapter();
            var spec = new OptionsSpec(adapter.Prototype, adapter.DefaultTransport, adapter.Transports);
            spec.ExtraFlags[RateSettings.TargetFrameRateFlag] = "";
            spec.ExtraFlags[RateSettings.SendRateFlag] = "";
            // Unity's own player flags, as the manifests' command_prefix passes them.
            spec.HostFlags["batchmode"] = false;
            spec.HostFlags["nographics"] = false;
            spec.HostFlags["logFile"] = true;
            options = Options.Parse(Environment.GetCommandLineArgs(), spec);

            RateSettings rates = RateSettings.From(options);
            QualitySettings.vSyncCount = rates.VSyncCount;
            Application.targetFrameRate = rates.TargetFrameRate;
            adapter.Configure(options, rates);

            LineLog.EnsureDirectory(options.LogDir);
            meta = MetaFile.Create(options.LogDir, options.Proc);
            if (options.Role == "server")
            {
                IServerTransport transport = adapter.CreateServer(options);
                EventLog events = EventLog.Create(options.LogDir, options.Proc);
                TickLog ticks = TickLog.Create(options.LogDir);
                logs = new LineLog[] { events, ticks };
                // The world workload's world is built here, before READY.
                server = new ServerCore(options, transport, events, ticks);
                meta.Values["message_limits"] = (transport.Limits ?? MessageLimits.Contract).MetaValue();
                meta.WriteStart(options, adapter.Prototype, transport.LibraryVersions, transport.EffectiveChannels, rates.MetaKeys());
                server.Start();
                int pid = System.Diagnostics.Process.GetCurrentProcess().Id;
                ProcessOutput.Line(Lines.Ready(transport.Name, server.Addr, pid));
            }
            else
            {
                IClientTransport transport = adapter.CreateClient(options);
                RttLog rtt = RttLog.Create(options.LogDir, options.Proc);
                EventLog events = EventLog.Create(options.LogDir, options.Proc);
                logs = new LineLog[] { rtt, events };
                client = new ClientCore(options, transport, rtt, events);
                meta.Values["message_limits"] = (transport.Limits ?? MessageLimits.Contract).MetaValue();
                meta.WriteStart(options, adapter.Prototype, transport.LibraryVersions, transport.EffectiveChannels, rates.MetaKeys());
                client.Start();
            }
        }

        private void Step()
        {
            long now = Clock.MonoNs();
            if (server != null)
            {
                server.Step(now);
                if (Shutdown.IsRequested || server.Finished)
                {
                    string reason = Shutdown.IsRequested ? Shutdown.Reason : "duration elapsed";
                    server.Stop(reason);
                    End(ExitCode.Ok, reason);
                }
                return;
            }
            if (Shutdown.IsRequested && !stopping)
            {
                stopping = true;
                client.Stop(Shutdown.Reason);
            }
            client.Step(now);
            if (!connectedPrinted && client.AllConnected)
            {
                connectedPrinted = true;
                ProcessOutput.Line(Lines.Connected(client.Players, options.FirstPlayer, client.ConnectS));
            }
            if (client.Finished)
            {
                if (client.ExitCode != ExitCode.Ok && !string.IsNullOrEmpty(client.ExitReason))
                {
                    ProcessOutput.Error(client.ExitReason);
                }
                End(client.ExitCode, client.ExitReason);
            }
        }

        /// <summary>Closes the logs, records the exit in meta.json and quits with code (unless Unity is quitting already).</summary>
        private void End(int code, string reason, bool quit = true)
        {
            try
            {
                foreach (LineLog log in logs)
                {
                    log.Close();
                }
                if (meta != null)
                {
                    meta.WriteExit(code, reason);
                }
            }
            catch (LogDirException e)
            {
                ProcessOutput.Error(e.Message);
                code = ExitCode.LogDir;
            }
            if (quit)
            {
                Finish(code);
            }
            else
            {
                finished = true;
            }
        }

        /// <summary>Runs part of the host, turning the core's exceptions into the contract's exit codes.</summary>
        private void Run(Action part)
        {
            try
            {
                part();
            }
            catch (UsageException e)
            {
                Fail(ExitCode.BadArgs, e.Message);
            }
            catch (BindException e)
            {
                Fail(ExitCode.Bind, e.Message);
            }
            catch (LogDirException e)
            {
                Fail(ExitCode.LogDir, e.Message);
            }
            catch (Exception e)
            {
                Fail(ExitCode.Internal, "internal error: " + e);
            }
        }

        private void Fail(int code, string message)
        {
            ProcessOutput.Error(message);
            StopCores("error: " + message);
            if (finished)
            {
                return;
            }
            try
            {
                foreach (LineLog log in logs)
                {
                    log.Close();
                }
                if (meta != null && code != ExitCode.LogDir)
                {
                    meta.WriteExit(code, message);
                }
            }
            catch (Exception e)
            {
                ProcessOutput.Error("while recording the exit: " + e.Message);
            }
            Finish(code);
        }

        private void Finish(int code)
        {
            finished = true;
            quitAllowed = true;
            Application.Quit(code);
        }

        /// <summary>A quit that the host did not ask for becomes a stop request; the player exits once the core is done.</summary>
        private bool WantsToQuit()
        {
            if (quitAllowed)
            {
                return true;
            }
            Shutdown.Request("quit requested");
            return false;
        }

        /// <summary>The player quits regardless (WantsToQuit was bypassed): stop now so the logs are complete.</summary>
        private void OnQuitting()
        {
            if (!finished)
            {
                Shutdown.Request("quitting");
                StopCores(Shutdown.Reason);
                End(ExitCode.Ok, Shutdown.Reason, false);
            }
        }

        private void StopCores(string reason)
        {
            try
            {
                if (server != null)
                {
                    server.Stop(reason);
                }
                if (client != null)
                {
                    client.Stop(reason);
                }
            }
            catch (Exception e)
            {
                ProcessOutput.Error("while stopping: " + e);
            }
        }
    }
}
