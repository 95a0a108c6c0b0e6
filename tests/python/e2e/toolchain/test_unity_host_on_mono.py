"""The Unity projects' shared host (Netstick.Unity/Runtime), run outside Unity.

Unity cannot run here, but the host depends on a handful of UnityEngine members only. With a
stand-in for those and the mono prototype's TCP transport as the "library" (passed through the
host's EventQueue like a library's callbacks), the host runs under mono: its command line
(Unity's own flags included), READY/CONNECTED, logs, meta.json keys, exit codes and quit
handling are checked against the contract.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from support.paths import REPO

UNITY = REPO / "prototypes" / "unity"

UNITY_ENGINE_STAND_IN = """
using System;
using System.Collections.Generic;
namespace UnityEngine
{
    public class Object { }
    public class Component : Object { public GameObject gameObject = new GameObject(); }
    public class GameObject : Object { }
    public class MonoBehaviour : Component
    {
        public static void DontDestroyOnLoad(Object o) { }
    }
    public class TextAsset : Object { public string text = ""; }
    public static class Resources
    {
        public static T Load<T>(string name) where T : Object
        {
            if (name == "netstick-build" && typeof(T) == typeof(TextAsset))
            {
                return (T)(Object)new TextAsset { text = "stand-in.library=1.2.3\\n" };
            }
            return null;
        }
    }
    public enum LogType { Error, Assert, Warning, Log, Exception }
    public static class QualitySettings { public static int vSyncCount = 1; }
    public static class Application
    {
        public delegate void LogCallback(string condition, string stackTrace, LogType type);
        public static bool runInBackground;
        public static int targetFrameRate = -1;
        public static string unityVersion = "6000.3.18f1";
        public static event Func<bool> wantsToQuit;
        public static event Action quitting;
        public static event LogCallback logMessageReceivedThreaded;
        public static int? ExitCode;
        public static void Quit(int code)
        {
            if (RequestQuit()) { ExitCode = code; }
        }
        // What Unity does on a quit request (Application.Quit, SIGTERM): ask, then quit.
        public static bool RequestQuit()
        {
            if (wantsToQuit != null)
            {
                foreach (Func<bool> f in wantsToQuit.GetInvocationList())
                {
                    if (!f()) { return false; }
                }
            }
            if (quitting != null) { quitting(); }
            return true;
        }
        public static void Log(string message)
        {
            if (logMessageReceivedThreaded != null)
            {
                logMessageReceivedThreaded(message, "", LogType.Log);
            }
        }
    }
}
"""

HOST_DRIVER = """
using System;
using System.Collections.Generic;
using System.Threading;
using Mono.Unix;
using Mono.Unix.Native;
using Netstick.Core;
using Netstick.Unity;

namespace Netstick.HostCheck
{
    // A "library" whose callbacks land in the host's EventQueue, as the Unity adapters' do.
    sealed class QueuedServer : IServerTransport, IServerHandler
    {
        readonly IServerTransport inner; readonly EventQueue events = new EventQueue();
        public QueuedServer(IServerTransport inner) { this.inner = inner; }
        public string Name { get { return "tcp"; } }
        public IDictionary<string, string> LibraryVersions
        {
            get { return BuildInfo.LibraryVersions(); }
        }
        public IDictionary<string, string> EffectiveChannels
        {
            get { return inner.EffectiveChannels; }
        }
        public MessageLimits Limits { get { return inner.Limits; } }
        public void Start(string host, int port) { inner.Start(host, port); }
        public void Poll(IServerHandler h) { inner.Poll(this); events.DrainServer(h); }
        public void Send(int peer, byte[] m, int n, Channel c) { inner.Send(peer, m, n, c); }
        public void Disconnect(int peer) { inner.Disconnect(peer); }
        public void Stop() { inner.Stop(); }
        public void OnJoin(int peer, string remote) { events.Join(peer, remote); }
        public void OnMessage(int peer, byte[] m, int n, Channel c)
        {
            events.Message(peer, m, 0, n, c);
        }
        public void OnLeave(int peer, string reason) { events.Leave(peer, reason); }
    }

    sealed class QueuedClient : IClientTransport, IClientHandler
    {
        readonly IClientTransport inner; readonly EventQueue events = new EventQueue();
        public QueuedClient(IClientTransport inner) { this.inner = inner; }
        public string Name { get { return "tcp"; } }
        public IDictionary<string, string> LibraryVersions
        {
            get { return BuildInfo.LibraryVersions(); }
        }
        public IDictionary<string, string> EffectiveChannels
        {
            get { return inner.EffectiveChannels; }
        }
        public MessageLimits Limits { get { return inner.Limits; } }
        public void Connect(int player, string host, int port)
        {
            inner.Connect(player, host, port);
        }
        public void Poll(IClientHandler h) { inner.Poll(this); events.DrainClient(h); }
        public void Send(int player, byte[] m, int n, Channel c) { inner.Send(player, m, n, c); }
        public void Disconnect(int player) { inner.Disconnect(player); }
        public double LibraryRttUs(int player) { return double.NaN; }
        public void OnConnected(int player) { events.Join(player, ""); }
        public void OnMessage(int player, byte[] m, int n, Channel c)
        {
            events.Message(player, m, 0, n, c);
        }
        public void OnDisconnected(int player, string reason) { events.Leave(player, reason); }
    }

    sealed class Adapter : ILibraryAdapter
    {
        public string Prototype { get { return "unity-hostcheck"; } }
        public string DefaultTransport { get { return "tcp"; } }
        public string[] Transports { get { return new[] { "tcp" }; } }
        public void Configure(Options options, RateSettings rates) { }
        public IServerTransport CreateServer(Options o)
        {
            return new QueuedServer(new Netstick.Mono.TcpServerTransport(o.TransportOptions));
        }
        public IClientTransport CreateClient(Options o)
        {
            return new QueuedClient(new Netstick.Mono.TcpClientTransport(o.TransportOptions));
        }
    }

    sealed class Bootstrap : NetstickHost
    {
        protected override ILibraryAdapter CreateAdapter() { return new Adapter(); }
        public void Wake() { Awake(); }
        public void Frame() { Update(); }
    }

    static class Player
    {
        static int Main(string[] args)
        {
            var signals = new[] { new UnixSignal(Signum.SIGTERM), new UnixSignal(Signum.SIGINT) };
            var host = new Bootstrap();
            host.Wake();
            bool asked = false;
            // Frames until the host quits, as a player does at its target frame rate.
            while (UnityEngine.Application.ExitCode == null)
            {
                if (!asked && (signals[0].IsSet || signals[1].IsSet))
                {
                    asked = true;
                    if (UnityEngine.Application.RequestQuit()) { return 0; }
                }
                host.Frame();
                Thread.Sleep(1);
            }
            return UnityEngine.Application.ExitCode.Value;
        }
    }
}
"""


@pytest.fixture(scope="module")
def host_on_mono(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("mcs") is None or shutil.which("mono") is None:
        pytest.skip("mono's mcs and mono are missing (Debian: mono-devel)")
    work = tmp_path_factory.mktemp("unity-host")
    (work / "UnityEngine.cs").write_text(UNITY_ENGINE_STAND_IN)
    (work / "Driver.cs").write_text(HOST_DRIVER)
    mono_sources = [
        p for p in sorted((REPO / "prototypes" / "mono").glob("*.cs")) if p.name != "Program.cs"
    ]
    sources = [
        *sorted((UNITY / "Netstick.Core").glob("*.cs")),
        *sorted((UNITY / "Netstick.Unity" / "Runtime").glob("*.cs")),
        *mono_sources,
        work / "UnityEngine.cs",
        work / "Driver.cs",
    ]
    exe = work / "host.exe"
    build = subprocess.run(
        [
            "mcs",
            "-langversion:7.2",
            "-nologo",
            "-target:exe",
            "-r:Mono.Posix.dll",
            f"-out:{exe}",
            *map(str, sources),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    return exe


def unity_argv(exe: Path, *flags: str) -> list[str]:
    # Unity players get the manifest's command_prefix before the contract's flags.
    return ["mono", str(exe), "-batchmode", "-nographics", "-logFile", "/dev/null", *flags]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_host_runs_server_and_client_under_the_contract(host_on_mono: Path, tmp_path: Path) -> None:
    from prototypes.contract import lines
    from prototypes.contract.checklogs import check_log_dir

    logs = tmp_path / "logs"
    port = free_port()
    common = ["-host", "127.0.0.1", "-port", str(port), "-log-dir", str(logs), "-tick-rate", "30"]
    server = subprocess.Popen(
        unity_argv(host_on_mono, "-role", "server", "-duration", "4", "-send-rate", "20", *common),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        ready = server.stdout.readline().strip()
        assert lines.READY_RE.fullmatch(ready), ready
        assert f"addr=127.0.0.1:{port}" in ready and f"pid={server.pid}" in ready
        client = subprocess.run(
            unity_argv(
                host_on_mono,
                "-role",
                "client",
                "-players",
                "2",
                "-duration",
                "1",
                "-target-frame-rate",
                "90",
                *common,
            ),
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert client.returncode == 0, client.stderr
        (connected,) = client.stdout.splitlines()
        assert connected.startswith("NETSTICK CONNECTED players=2 first=0 connect_s=")
        server_out, server_err = server.communicate(timeout=30)
    finally:
        server.kill()
    assert server.returncode == 0, server_err
    assert server_out == ""
    assert [str(v) for v in check_log_dir(logs)] == []
    meta = json.loads((logs / "client-0.meta.json").read_text())
    assert meta["status"] == "exited" and meta["exit_code"] == 0
    assert meta["prototype"] == "unity-hostcheck"
    assert meta["library_versions"]["unity"] == "6000.3.18f1"
    assert meta["library_versions"]["stand-in.library"] == "1.2.3"
    assert meta["target_frame_rate"] == 90 and meta["vsync_count"] == 0
    assert meta["send_rate_hz"] == 30 and meta["tick_rate_hz"] == 30
    assert meta["args"][1:6] == ["-batchmode", "-nographics", "-logFile", "/dev/null", "-role"]
    server_meta = json.loads((logs / "server.meta.json").read_text())
    assert server_meta["send_rate_hz"] == 20 and server_meta["target_frame_rate"] == 30


def test_host_exit_codes(host_on_mono: Path, tmp_path: Path) -> None:
    def run(*flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            unity_argv(host_on_mono, *flags), capture_output=True, text=True, timeout=30
        )

    logs = ["-log-dir", str(tmp_path / "logs")]
    bad = run("-role", "server", "-no-such-flag", "1", *logs)
    assert bad.returncode == 2 and "no-such-flag" in bad.stderr and bad.stdout == ""
    rate = run("-role", "server", "-send-rate", "fast", *logs)
    assert rate.returncode == 2 and "-send-rate" in rate.stderr
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        taken = run("-role", "server", "-host", "127.0.0.1", "-port", str(port), *logs)
    assert taken.returncode == 3 and taken.stdout == "", taken.stderr
    lost = run("-role", "client", "-port", str(free_port()), "-connect-timeout-s", "1", *logs)
    assert lost.returncode == 4, lost.stderr


def test_host_stops_on_sigterm(host_on_mono: Path, tmp_path: Path) -> None:
    """A quit request (SIGTERM; Unity asks Application.wantsToQuit) stops the server in order: exit
    0, every log closed, meta.json exited."""
    from prototypes.contract.checklogs import check_log_dir

    logs = tmp_path / "logs"
    server = subprocess.Popen(
        unity_argv(
            host_on_mono, "-role", "server", "-port", str(free_port()), "-log-dir", str(logs)
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline().startswith("NETSTICK READY")
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=10)
    finally:
        server.kill()
    assert server.returncode == 0, err
    meta = json.loads((logs / "server.meta.json").read_text())
    assert meta["status"] == "exited" and meta["exit_code"] == 0
    assert [str(v) for v in check_log_dir(logs)] == []
