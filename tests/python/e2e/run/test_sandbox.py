"""Per-run sandboxes: namespaces, veths, addresses, offloads, static neighbours, the emulator,
and a complete teardown in every case (after each test no namespace or veth of its sandboxes and
no child process is left: the run tier's fixture, e2e/run/conftest.py). Needs root; skipped with
the reason otherwise. The tests that run the real netemu skip when
workflow/harness/netemu/bin/netemu is not built; the emulator's lifecycle is also tested with
small fake emulators, which need no build.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from workflow.harness import netns, sandbox
from workflow.harness import netprofiles as profiles
from workflow.harness.sandbox import NETEMU_BINARY, Sandbox, SandboxError

from support.marks import needs_netemu, needs_sandbox

pytestmark = needs_sandbox

# One ICMP echo per argument count over a raw socket (root), so the tests need no iputils-ping.
# Prints one RTT in ms per reply; exits 1 on a timeout.
ICMP_PING = textwrap.dedent(
    """
    import os, socket, struct, sys, time
    def csum(b):
        s = sum(struct.unpack(f"!{len(b) // 2}H", b))
        s = (s >> 16) + (s & 0xFFFF)
        return ~(s + (s >> 16)) & 0xFFFF
    dst, n, timeout_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.settimeout(timeout_s)
    ident = os.getpid() & 0xFFFF
    for seq in range(n):
        body = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + b"x" * 56
        pkt = struct.pack("!BBHHH", 8, 0, csum(body), ident, seq) + b"x" * 56
        t0 = time.perf_counter()
        s.sendto(pkt, (dst, 0))
        try:
            while True:
                data = s.recv(2048)
                typ, _, _, rid, rseq = struct.unpack("!BBHHH", data[20:28])
                if typ == 0 and rid == ident and rseq == seq:
                    break
        except TimeoutError:
            sys.exit(1)
        print(f"{(time.perf_counter() - t0) * 1e3:.3f}", flush=True)
    """
)


def _gone(run_id: str) -> bool:
    """Whether no namespace or host link of run_id's sandbox remains (another program's
    sandboxes on this machine are none of this test's business)."""
    return netns.leftovers(f"{netns.PREFIX}{sandbox.short_id(run_id)}") == []


def _ping(sb: Sandbox, role: str, dst: str, count: int = 1, timeout_s: float = 2.0) -> list[float]:
    """RTTs in ms of ICMP echoes from a role's namespace; [] if no reply came back."""
    result = subprocess.run(
        [*sb.prefix(role), sys.executable, "-c", ICMP_PING, dst, str(count), str(timeout_s)],
        capture_output=True,
        text=True,
        timeout=timeout_s * count + 10,
    )
    return [float(x) for x in result.stdout.split()] if result.returncode == 0 else []


def _ip_json(ns: str, *args: str) -> list[dict[str, object]]:
    out = subprocess.run(
        ["ip", "-n", ns, "-j", *args], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out) if out.strip() else []


def _offloads(ns: str, iface: str) -> dict[str, str]:
    out = subprocess.run(
        ["ip", "netns", "exec", ns, "ethtool", "-k", iface],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    features = {}
    for line in out.splitlines()[1:]:
        key, _, value = line.strip().partition(": ")
        features[key] = value.split()[0] if value else ""
    return features


def test_names_are_short_and_unique_per_run() -> None:
    a, b = Sandbox("campaign/cell-a/run-1"), Sandbox("campaign/cell-a/run-2")
    assert a.short != b.short
    assert a.server_ns != b.server_ns
    for sb in (a, Sandbox("x" * 500, emulator=True)):
        for _, iface in sb.links:
            assert len(iface) <= 15, iface  # IFNAMSIZ - 1
        assert all(ns.startswith("nsk-") for ns in sb.namespaces)
    assert a.prefix("players") == ["ip", "netns", "exec", a.client_ns]
    with pytest.raises(SandboxError, match="no emulator namespace"):
        a.prefix("emulator")


def test_sandbox_without_emulator() -> None:
    with Sandbox("test-plain") as sb:
        assert set(sb.namespaces) <= set(netns.list_netns())
        assert sb.emulator_ns is None and sb.emu_iface_a is None
        for ns, iface, addr, peer_addr, peer_mac in (
            (sb.client_ns, sb.client_iface, "10.77.0.1", "10.77.0.2", sandbox.SERVER_MAC),
            (sb.server_ns, sb.server_iface, "10.77.0.2", "10.77.0.1", sandbox.CLIENT_MAC),
        ):
            (link,) = _ip_json(ns, "addr", "show", "dev", iface)
            assert link["mtu"] == 1500 and link["operstate"] == "UP"
            addrs = [(a["family"], a["local"], a["prefixlen"]) for a in link["addr_info"]]
            assert addrs == [("inet", addr, 24)]  # no inet6: IPv6 is off
            (lo,) = _ip_json(ns, "link", "show", "lo")
            assert "UP" in lo["flags"]
            (neigh,) = _ip_json(ns, "neigh", "show", "dev", iface)
            assert neigh["dst"] == peer_addr and neigh["lladdr"] == peer_mac
            assert neigh["state"] == ["PERMANENT"]
            features = _offloads(ns, iface)
            for key in (
                "rx-checksumming",
                "tx-checksumming",
                "tcp-segmentation-offload",
                "generic-segmentation-offload",
                "generic-receive-offload",
            ):
                assert features[key] == "off", (iface, key)
            sysctl = subprocess.run(
                [*sb.prefix("server"), "sysctl", "-n", "net.ipv6.conf.all.disable_ipv6"],
                capture_output=True,
                text=True,
                check=True,
            )
            assert sysctl.stdout.strip() == "1"
        assert len(_ping(sb, "client", sb.server_addr, count=2)) == 2
        assert len(_ping(sb, "server", sb.client_addr)) == 1
        # isolated: the host's addresses are unreachable from inside
        assert _ping(sb, "client", "127.0.0.1", timeout_s=0.5)  # its own lo, not the host's
        (route,) = _ip_json(sb.client_ns, "route", "show")
        assert route["dst"] == "10.77.0.0/24"  # no default route out
    assert _gone("test-plain")


def test_emulator_namespace_has_no_path_around_the_emulator() -> None:
    with Sandbox("test-emu-nopath", emulator=True) as sb:
        assert sb.emulator_ns is not None and sb.emu_iface_a and sb.emu_iface_b
        for iface in (sb.emu_iface_a, sb.emu_iface_b):
            (link,) = _ip_json(sb.emulator_ns, "addr", "show", "dev", iface)
            assert link["addr_info"] == []  # no IP in the middle
            assert "PROMISC" in link["flags"]
            assert _offloads(sb.emulator_ns, iface)["generic-receive-offload"] == "off"
        assert _ping(sb, "client", sb.server_addr, timeout_s=0.3) == []  # netemu not running


@needs_netemu
def test_sandbox_with_netemu(tmp_path: Path) -> None:
    with Sandbox("test-emu", emulator=True) as sb:
        argv = sb.start_emulator(profiles.get_profile("lan-emulated"), NETEMU_BINARY,
                                 tmp_path / "stats.json")  # fmt: skip
        assert argv[:4] == sb.prefix("emulator")
        assert len(_ping(sb, "client", sb.server_addr, count=3)) == 3
        stats = sb.stop_emulator()
        assert stats is not None
        # 3 echo requests A->B and 3 replies B->A, 98 B each (56 + 8 ICMP + 20 IP + 14 Eth);
        # no ARP frames thanks to the static neighbours
        assert stats["ab"]["frames_out"] == 3 and stats["ab"]["bytes_out"] == 3 * 98
        assert stats["ba"]["frames_out"] == 3
        assert sb.stop_emulator() == stats  # idempotent
        assert _ping(sb, "client", sb.server_addr, timeout_s=0.3) == []  # stopped: no path
    assert (tmp_path / "netemu.stdout.log").read_text().startswith("NETEMU READY")


@needs_netemu
def test_netemu_delays_each_direction(tmp_path: Path) -> None:
    delayed = profiles.validate_profile(
        "delayed", {"description": "t", "up": {"delay_ms": 10}, "down": {"delay_ms": 5}}
    )
    with Sandbox("test-emu-delay", emulator=True) as sb:
        sb.start_emulator(delayed, NETEMU_BINARY, tmp_path / "stats.json", seed=3)
        rtts = _ping(sb, "client", sb.server_addr, count=3)
    assert len(rtts) == 3
    assert min(rtts) >= 15.0 and max(rtts) < 40.0, rtts
    assert json.loads((tmp_path / "stats.json").read_text())["seed"] == 3


FAKE_NETEMU = textwrap.dedent(
    """\
    #!{python}
    # A stand-in for netemu: prints READY (or not), writes counters on SIGTERM (or ignores it).
    import json, signal, sys, time
    args = sys.argv[1:]
    out = args[args.index("-stats-out") + 1]
    mode = "{mode}"
    if mode == "fail":
        print("-ab-delay: expected a duration", file=sys.stderr)
        sys.exit(2)
    def stop(*_):
        json.dump({{"schema": "fake", "args": args}}, open(out, "w"))
        sys.exit(0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN if mode == "stubborn" else stop)
    if mode != "silent":
        print("NETEMU READY a=%s b=%s" % (args[1], args[3]), flush=True)
    for _ in range(300):
        time.sleep(0.1)
    """
)


def _fake_netemu(tmp_path: Path, mode: str) -> Path:
    path = tmp_path / f"netemu-{mode}"
    path.write_text(FAKE_NETEMU.format(python=sys.executable, mode=mode))
    path.chmod(0o755)
    return path


def test_emulator_lifecycle_with_a_fake(tmp_path: Path) -> None:
    wan = profiles.get_profile("wan")
    with Sandbox("test-fake-emu", emulator=True) as sb:
        argv = sb.start_emulator(wan, _fake_netemu(tmp_path, "ok"), tmp_path / "s.json")
        assert argv[5:9] == ["-a", sb.emu_iface_a, "-b", sb.emu_iface_b]
        assert "-ab-delay" in argv and argv[-2] == "-stats-out"
        proc = sb.emulator_process
        assert proc is not None and os.getpgid(proc.pid) == proc.pid  # its own process group
        assert sb.emulator_ns is not None and proc.pid in netns.netns_pids(sb.emulator_ns)
        with pytest.raises(SandboxError, match="already started"):
            sb.start_emulator(wan, _fake_netemu(tmp_path, "ok"), tmp_path / "s.json")
    # close() stopped it with SIGTERM, so it wrote its counters
    assert sb.emulator_stats is not None and sb.emulator_stats["schema"] == "fake"


def test_emulator_failures_are_clear(tmp_path: Path) -> None:
    lan_emu = profiles.get_profile("lan-emulated")
    with Sandbox("test-fake-fail", emulator=True, kill_grace_s=0.3) as sb:
        with pytest.raises(SandboxError, match="does not exist"):
            sb.start_emulator(lan_emu, tmp_path / "missing-netemu", tmp_path / "s.json")
        with pytest.raises(SandboxError, match=r"exited with code 2.*expected a duration"):
            sb.start_emulator(lan_emu, _fake_netemu(tmp_path, "fail"), tmp_path / "s.json")
    with Sandbox("test-fake-silent", emulator=True, kill_grace_s=0.3) as sb:
        t0 = time.monotonic()
        with pytest.raises(SandboxError, match=r"did not print .NETEMU READY. within 0\.3 s"):
            sb.start_emulator(
                lan_emu, _fake_netemu(tmp_path, "silent"), tmp_path / "s.json", ready_timeout_s=0.3
            )
        assert time.monotonic() - t0 < 3
    with Sandbox("test-fake-stubborn", emulator=True, kill_grace_s=0.3) as sb:
        sb.start_emulator(lan_emu, _fake_netemu(tmp_path, "stubborn"), tmp_path / "s.json")
        with pytest.raises(SandboxError, match="ignored SIGTERM"):
            sb.stop_emulator()
    with Sandbox("test-no-emu") as sb, pytest.raises(SandboxError, match="emulator=True"):
        sb.start_emulator(lan_emu, NETEMU_BINARY, tmp_path / "s.json")


def test_close_after_an_exception_removes_everything() -> None:
    with pytest.raises(RuntimeError, match="boom"), Sandbox("test-exc", emulator=True) as sb:
        proc = sb.spawn("server", ["sleep", "30"])
        assert proc.pid in netns.netns_pids(sb.server_ns)
        raise RuntimeError("boom")
    assert proc.returncode == -signal.SIGTERM  # killed and reaped by close()
    assert _gone("test-exc")


def test_close_kills_untracked_and_stubborn_processes() -> None:
    sb = Sandbox("test-stubborn", kill_grace_s=0.3).open()
    # started by someone else (not through sb.spawn), and ignoring SIGTERM
    stubborn = subprocess.Popen(
        [*sb.prefix("client"), "sh", "-c", "trap '' TERM; sleep 30 & wait"],
        start_new_session=True,
    )
    deadline = time.monotonic() + 5
    while len(netns.netns_pids(sb.client_ns)) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    t0 = time.monotonic()
    sb.close()
    assert time.monotonic() - t0 < 3
    assert stubborn.wait(timeout=5) == -signal.SIGKILL
    assert _gone("test-stubborn")
    sb.close()  # idempotent


def test_open_failure_cleans_up_and_existing_names_are_refused() -> None:
    with Sandbox("test-dup"), pytest.raises(SandboxError, match="already exist"):
        Sandbox("test-dup").open()
    assert _gone("test-dup")


def test_a_failure_while_building_removes_what_was_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "OFFLOADS_OFF", ("no-such-feature", "off"))
    with pytest.raises(SandboxError, match="ethtool -K"):
        Sandbox("test-broken", emulator=True).open()  # fails after the namespaces and veths
    assert _gone("test-broken")
    assert not (sandbox.OWNER_DIR / f"{sandbox.short_id('test-broken')}.json").exists()


def test_cleanup_stale_removes_only_dead_owners(tmp_path: Path) -> None:
    # A "crashed run": a namespace whose owner file names a process that has exited.
    dead = subprocess.Popen(["true"])
    dead.wait()
    short = "dead01"
    sandbox.OWNER_DIR.mkdir(parents=True, exist_ok=True)
    (sandbox.OWNER_DIR / f"{short}.json").write_text(
        json.dumps({"pid": dead.pid, "create_time": 1.0, "run_id": "crashed"})
    )
    subprocess.run(["ip", "netns", "add", f"nsk-{short}-s"], check=True)
    orphan = subprocess.Popen(
        ["ip", "netns", "exec", f"nsk-{short}-s", "sleep", "30"], start_new_session=True
    )
    with Sandbox("test-live") as live:
        removed = sandbox.cleanup_stale()
        assert removed == [f"netns nsk-{short}-s"]
        assert set(live.namespaces) <= set(netns.list_netns())  # the live one is kept
    assert orphan.wait(timeout=5) == -signal.SIGTERM
    assert not (sandbox.OWNER_DIR / f"{short}.json").exists()
