"""Per-run network isolation: network namespaces joined by veth pairs (needs root).

One run gets its own namespaces, so its traffic is isolated from every other run and from the
host, and the server's veth counters count exactly that run's wire bytes and packets
(monitors/netcounters.py):

    without emulator:  [nsk-<short>-c] c0 <-veth-> s0 [nsk-<short>-s]
    with emulator:     [nsk-<short>-c] c0 <-veth-> ea [nsk-<short>-e] eb <-veth-> s0 [...-s]
                                                   netemu bridges ea <-> eb

(interface names are ``nsk-<short>-c0`` etc.)

``<short>`` is the first 6 hex digits of sha256(run_id): namespace and interface names stay
unique per run and within IFNAMSIZ (``nsk-<short>-ea`` is 13 characters). The players get
10.77.0.1/24 and the server 10.77.0.2/24 in every run (namespaces keep runs apart); the middle
namespace has no IP address, so there is no path around the emulator. In every namespace ``lo``
is up and IPv6 is off; every veth end has MTU 1500 and its offloads off (so counters and the
emulator see real frames, one per packet) and a fixed MAC; the two IP ends know each other
through permanent neighbour entries, so no ARP frame ever enters the accounting or waits in the
emulator's delay line.

    with Sandbox(run_id, emulator=True) as sb:
        sb.start_emulator(profile, NETEMU_BINARY, run_dir / "netemu-stats.json")
        server = sb.spawn("server", [binary, "-role", "server", ...])
        ...
    # every process in the namespaces is killed, the namespaces are gone, or SandboxError says
    # what was left behind.

``netns.leftovers()`` lists what any sandbox left (tests assert it is empty); ``cleanup_stale()``
removes the namespaces of crashed runs, recognised by their owner file (pid + start time) in
``/run/netstick/sandbox``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import psutil

from workflow.harness import netns, userns
from workflow.harness.netns import PREFIX, SandboxError
from workflow.harness.netprofiles import emulator_args

log = logging.getLogger(__name__)

OWNER_DIR = Path(os.environ.get("NETSTICK_SANDBOX_DIR", "/run/netstick/sandbox"))
CLIENT_ADDR = "10.77.0.1"
SERVER_ADDR = "10.77.0.2"
PREFIX_LEN = 24
MTU_BYTES = 1500
# Fixed, locally administered MACs ("NS" = 4e:53): the frames of a run are the same every time.
CLIENT_MAC = "02:4e:53:00:00:01"
SERVER_MAC = "02:4e:53:00:00:02"
EMU_A_MAC = "02:4e:53:00:00:0a"
EMU_B_MAC = "02:4e:53:00:00:0b"
# Fixed, pairwise different interface indexes. Each namespace numbers its links from 2, so
# both ends of a veth would otherwise get index 2; the kernel then takes the link for a
# non-veth (ifindex == iflink) and defers its carrier event by up to 1 s, during which
# frames are dropped.
CLIENT_IFINDEX, EMU_A_IFINDEX, EMU_B_IFINDEX, SERVER_IFINDEX = 11, 12, 13, 14
OFFLOADS_OFF = ("tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off")
ROLES = {"server": "s", "client": "c", "players": "c", "emulator": "e"}
READY_PREFIX = "NETEMU READY"
DEFAULT_KILL_GRACE_S = 2.0
NETEMU_BINARY = Path(__file__).resolve().parent / "netemu" / "bin" / "netemu"


def short_id(run_id: str) -> str:
    """The 6 hex digits that name a run's namespaces and interfaces."""
    if not run_id:
        raise SandboxError("run_id must be a non-empty string")
    return hashlib.sha256(run_id.encode()).hexdigest()[:6]


def _owner_path(short: str) -> Path:
    return OWNER_DIR / f"{short}.json"


def _write_owner(short: str, run_id: str) -> None:
    OWNER_DIR.mkdir(parents=True, exist_ok=True)
    me = psutil.Process()
    path = _owner_path(short)
    if path.exists() and _owner_alive(short):
        raise SandboxError(
            f"{path}: sandbox {PREFIX}{short}-* is owned by another live process; a run id "
            "must be unique among concurrent runs"
        )
    tmp = path.with_suffix(".tmp")
    tmp.write_text(
        json.dumps({"pid": me.pid, "create_time": me.create_time(), "run_id": run_id}) + "\n"
    )
    tmp.replace(path)


def _owner_alive(short: str) -> bool:
    try:
        owner = json.loads(_owner_path(short).read_text())
        proc = psutil.Process(int(owner["pid"]))
        # A recycled pid has another start time.
        return abs(proc.create_time() - float(owner["create_time"])) < 0.01
    except (OSError, ValueError, KeyError, TypeError, psutil.Error):
        return False


def _remove_owner(short: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        _owner_path(short).unlink()


def _short_of(name: str) -> str | None:
    if not name.startswith(PREFIX):
        return None
    short, sep, _ = name[len(PREFIX) :].partition("-")
    return short if sep and short else None


def cleanup_stale() -> list[str]:
    """Remove the namespaces (and any host links) of sandboxes whose owner process is gone.

    A sandbox whose owner is alive is left alone, so this is safe while other runs are going.
    Returns what was removed, and logs one line for each.
    """
    removed: list[str] = []
    by_short: dict[str, list[str]] = {}
    for ns in netns.list_netns():
        short = _short_of(ns)
        if short is not None:
            by_short.setdefault(short, []).append(ns)
    for short, namespaces in sorted(by_short.items()):
        if _owner_alive(short):
            continue
        survivors = netns.kill_netns_processes(namespaces, DEFAULT_KILL_GRACE_S)
        if survivors:
            log.error("stale sandbox %s: cannot kill %s", short, ", ".join(survivors))
            continue
        for ns in namespaces:
            netns.delete(ns)
            log.warning("removed stale network namespace %s (its owner process is gone)", ns)
            removed.append(f"netns {ns}")
        _remove_owner(short)
    for link in netns.host_links():
        short = _short_of(link)
        if short is not None and not _owner_alive(short):
            netns.run(["ip", "link", "del", link], check=False)
            log.warning("removed stale link %s from the host namespace", link)
            removed.append(f"link {link}")
    if OWNER_DIR.is_dir():
        live = set(by_short)
        for path in OWNER_DIR.glob("*.json"):
            if path.stem not in live and not _owner_alive(path.stem):
                path.unlink(missing_ok=True)
    return removed


@contextlib.contextmanager
def scratch_namespace(tag: str) -> Iterator[str]:
    """A throwaway namespace ``nsk-<random>-<tag>`` (with owner file), removed on exit."""
    short = secrets.token_hex(3)
    ns = f"{PREFIX}{short}-{tag}"
    _write_owner(short, f"scratch-{tag}")
    try:
        netns.run(["ip", "netns", "add", ns])
        yield ns
    finally:
        netns.kill_netns_processes([ns], DEFAULT_KILL_GRACE_S)
        netns.delete(ns)
        _remove_owner(short)


@functools.cache
def kernel_has_netem() -> bool:
    """Whether this kernel can run netem: probed once by adding a netem qdisc to a dummy link
    in a throwaway namespace (cached). False without root, since then it cannot be probed and
    no sandbox could use it anyway."""
    if os.geteuid() != 0:
        return False
    try:
        with scratch_namespace("p") as ns:
            subprocess.run(
                ["ip", "-n", ns, "link", "add", "nskprobe0", "type", "dummy"],
                check=True,
                capture_output=True,
                timeout=10,
            )
            probe = subprocess.run(
                [
                    "tc",
                    "-n",
                    ns,
                    "qdisc",
                    "add",
                    "dev",
                    "nskprobe0",
                    "root",
                    "netem",
                    "delay",
                    "1ms",
                ],
                capture_output=True,
                timeout=10,
            )
            return probe.returncode == 0
    except (OSError, subprocess.SubprocessError, SandboxError):
        return False


def isolation_available() -> tuple[bool, str]:
    """(True, how) if this process can build sandboxes, else (False, why not).

    Checks root, the tools (ip, ethtool, sysctl) and that a namespace can really be created.
    """
    if os.geteuid() != 0:
        inner, why = userns.available()
        if inner:
            return False, "not root: each run builds its namespaces in a user namespace of its own"
        return False, (
            f"not root, and {why}: runs use plain loopback instead (isolation none: no network "
            "profile can be applied, the traffic counters are the host's)"
        )
    missing = netns.missing_tools()
    if missing:
        return False, "missing: " + ", ".join(missing)
    try:
        with scratch_namespace("x") as ns:
            netns.run(["ip", "-n", ns, "link", "set", "lo", "up"])
    except (SandboxError, OSError) as exc:
        return False, f"`ip netns` does not work here: {exc}"
    return True, "root; ip netns, ethtool and sysctl work"


# -- the sandbox --------------------------------------------------------------------------


class Sandbox:
    """The namespaces of one run. Use as a context manager (or open() then close())."""

    def __init__(
        self, run_id: str, emulator: bool = False, *, kill_grace_s: float = DEFAULT_KILL_GRACE_S
    ) -> None:
        self.run_id = run_id
        self.short = short_id(run_id)
        self.emulator = emulator
        self.kill_grace_s = kill_grace_s
        base = f"{PREFIX}{self.short}"
        self.server_ns = f"{base}-s"
        self.client_ns = f"{base}-c"
        self.emulator_ns: str | None = f"{base}-e" if emulator else None
        self.server_iface = f"{base}-s0"
        self.client_iface = f"{base}-c0"
        # The emulator's ends: A faces the players, B the server (netemu's -a/-b).
        self.emu_iface_a: str | None = f"{base}-ea" if emulator else None
        self.emu_iface_b: str | None = f"{base}-eb" if emulator else None
        self.server_addr = SERVER_ADDR
        self.client_addr = CLIENT_ADDR
        self.emulator_process: subprocess.Popen[bytes] | None = None
        self.emulator_stats: dict[str, Any] | None = None
        self.emulator_stats_path: Path | None = None
        self.emulator_stderr_path: Path | None = None
        self._emulator_logs: list[IO[bytes]] = []
        self._emulator_stopped = False
        self._emulator_problem = ""
        self._procs: list[subprocess.Popen[Any]] = []
        self._opened = False
        self._closed = False

    # -- names ------------------------------------------------------------------------------

    @property
    def namespaces(self) -> list[str]:
        return [ns for ns in (self.client_ns, self.emulator_ns, self.server_ns) if ns]

    @property
    def links(self) -> list[tuple[str, str]]:
        """Every veth end as (namespace, interface)."""
        ends = [(self.client_ns, self.client_iface), (self.server_ns, self.server_iface)]
        if self.emulator_ns and self.emu_iface_a and self.emu_iface_b:
            ends += [(self.emulator_ns, self.emu_iface_a), (self.emulator_ns, self.emu_iface_b)]
        return ends

    def netns(self, role: str) -> str:
        """The namespace of a role: server, client (= players) or emulator."""
        suffix = ROLES.get(role)
        if suffix is None:
            raise SandboxError(f"role {role!r}: expected one of {', '.join(ROLES)}")
        if suffix == "e" and self.emulator_ns is None:
            raise SandboxError(f"sandbox {self.run_id!r} has no emulator namespace")
        return f"{PREFIX}{self.short}-{suffix}"

    def prefix(self, role: str) -> list[str]:
        """The argv prefix that runs a command in a role's namespace."""
        return ["ip", "netns", "exec", self.netns(role)]

    # -- lifecycle --------------------------------------------------------------------------

    def __enter__(self) -> Sandbox:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def open(self) -> Sandbox:
        """Create the namespaces and links. On any failure, removes what it made and raises."""
        if self._opened:
            raise SandboxError(f"sandbox {self.run_id!r} already opened")
        if os.geteuid() != 0:
            raise SandboxError("a sandbox needs root (network namespaces); run as root")
        missing = netns.missing_tools()
        if missing:
            raise SandboxError(
                "sandbox needs: " + ", ".join(missing) + " (workflow/setup.sh installs them; "
                "ethtool turns veth offloads off so counters and the emulator see one frame "
                "per packet)"
            )
        existing = sorted(set(self.namespaces) & set(netns.list_netns()))
        if existing:
            raise SandboxError(
                f"namespace(s) {', '.join(existing)} already exist: another run with run id "
                f"{self.run_id!r} is active, or a crashed run left them "
                "(workflow.harness.sandbox.cleanup_stale() removes those of dead owners)"
            )
        _write_owner(self.short, self.run_id)
        self._opened = True
        try:
            self._build()
        except BaseException:
            with contextlib.suppress(SandboxError):
                self.close()
            raise
        return self

    def _build(self) -> None:
        disable_ipv6 = ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]
        for ns in self.namespaces:
            netns.run(["ip", "netns", "add", ns])
            # Before any link exists, so no interface ever gets an IPv6 address, sends router
            # solicitations or MLD reports into the accounting.
            netns.run([*self._exec(ns), "sysctl", "-q", "-w", *disable_ipv6])
            netns.ip(ns, "link", "set", "lo", "up")
        c, s = self.client_ns, self.server_ns
        if self.emulator_ns and self.emu_iface_a and self.emu_iface_b:
            e = self.emulator_ns
            self._veth(
                (c, self.client_iface, CLIENT_MAC, CLIENT_IFINDEX),
                (e, self.emu_iface_a, EMU_A_MAC, EMU_A_IFINDEX),
            )
            self._veth(
                (e, self.emu_iface_b, EMU_B_MAC, EMU_B_IFINDEX),
                (s, self.server_iface, SERVER_MAC, SERVER_IFINDEX),
            )
        else:
            self._veth(
                (c, self.client_iface, CLIENT_MAC, CLIENT_IFINDEX),
                (s, self.server_iface, SERVER_MAC, SERVER_IFINDEX),
            )
        for ns, iface in self.links:
            # Offloads off: one frame per packet on the wire counters and in AF_PACKET, with
            # real checksums, as on a physical link.
            netns.run([*self._exec(ns), "ethtool", "-K", iface, *OFFLOADS_OFF])
            extra = ["promisc", "on"] if ns == self.emulator_ns else []
            netns.ip(ns, "link", "set", "dev", iface, *extra, "up")
        netns.ip(c, "addr", "add", f"{CLIENT_ADDR}/{PREFIX_LEN}", "dev", self.client_iface)
        netns.ip(s, "addr", "add", f"{SERVER_ADDR}/{PREFIX_LEN}", "dev", self.server_iface)
        # Static neighbours instead of ARP: no ARP frames in the counters, and no first packet
        # waiting for an ARP exchange through the emulator's delay.
        permanent = ("nud", "permanent")
        netns.ip(
            c,
            "neigh",
            "replace",
            SERVER_ADDR,
            "lladdr",
            SERVER_MAC,
            "dev",
            self.client_iface,
            *permanent,
        )
        netns.ip(
            s,
            "neigh",
            "replace",
            CLIENT_ADDR,
            "lladdr",
            CLIENT_MAC,
            "dev",
            self.server_iface,
            *permanent,
        )
        self._wait_links_up()

    def _wait_links_up(self, timeout_s: float = 3.0) -> None:
        # The kernel finishes bringing a veth up (operstate, qdisc) asynchronously, in its
        # linkwatch work; until then frames can be dropped. Usually ~10 ms, longer under load.
        deadline = time.monotonic() + timeout_s
        while True:
            down = []
            for ns in self.namespaces:
                links = json.loads(netns.run(["ip", "-n", ns, "-j", "link", "show"]).stdout)
                for link in links:
                    if link.get("ifname", "").startswith(PREFIX) and link.get("operstate") != "UP":
                        down.append(f"{link['ifname']} in {ns} ({link.get('operstate')})")
            if not down:
                return
            if time.monotonic() > deadline:
                raise SandboxError(f"links not up after {timeout_s} s: {', '.join(down)}")
            time.sleep(0.01)

    @staticmethod
    def _exec(ns: str) -> list[str]:
        return ["ip", "netns", "exec", ns]

    @staticmethod
    def _veth(end1: tuple[str, str, str, int], end2: tuple[str, str, str, int]) -> None:
        """One veth pair; each end is (namespace, name, MAC, ifindex)."""

        # Both ends are created directly inside their namespaces: they never exist in the host
        # namespace, not even for a moment.
        def spec(ns: str, name: str, mac: str, index: int) -> list[str]:
            return ["name", name, "netns", ns, "address", mac, "mtu", str(MTU_BYTES),
                    "index", str(index)]  # fmt: skip

        netns.run(["ip", "link", "add", *spec(*end1), "type", "veth", "peer", *spec(*end2)])

    def spawn(self, role: str, argv: Sequence[str], **popen_kwargs: Any) -> subprocess.Popen[Any]:
        """Start a process in a role's namespace, in its own process group; close() reaps it.

        Returns once the process is inside the namespace (``ip netns exec`` switches before it
        execs the command), so its pid can be used at once, e.g. for /proc/<pid>/net/dev.
        """
        if not self._opened or self._closed:
            raise SandboxError(f"sandbox {self.run_id!r} is not open")
        popen_kwargs.setdefault("start_new_session", True)
        popen_kwargs.setdefault("stdin", subprocess.DEVNULL)
        ns = self.netns(role)
        proc = subprocess.Popen([*self.prefix(role), *argv], **popen_kwargs)
        self._procs.append(proc)
        netns.wait_in_netns(proc, ns)
        return proc

    # -- emulator ---------------------------------------------------------------------------

    def start_emulator(
        self,
        profile: Mapping[str, Any],
        netemu_binary: str | Path = NETEMU_BINARY,
        stats_out: str | Path = "netemu-stats.json",
        *,
        seed: int | None = None,
        ready_timeout_s: float = 5.0,
    ) -> list[str]:
        """Start netemu in the middle namespace with the profile's flags; wait for READY.

        Returns the command line (for the run's metadata); the process is
        ``self.emulator_process``, in its own process group. Its stdout and stderr go to
        ``netemu.stdout.log``/``netemu.stderr.log`` beside stats_out; on SIGTERM it writes its
        JSON counters to stats_out (see stop_emulator). ``seed`` seeds its randomness (loss,
        jitter); without it netemu's default seed is used, so runs are reproducible either way.
        """

        if self.emulator_ns is None or self.emu_iface_a is None or self.emu_iface_b is None:
            raise SandboxError(
                f"sandbox {self.run_id!r} was created without emulator=True; a profile that "
                "needs the emulator needs Sandbox(run_id, emulator=True)"
            )
        if not self._opened or self._closed:
            raise SandboxError(f"sandbox {self.run_id!r} is not open")
        if self.emulator_process is not None:
            raise SandboxError(f"sandbox {self.run_id!r}: the emulator is already started")
        binary = Path(netemu_binary)
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            raise SandboxError(
                f"netemu binary {binary} does not exist or is not executable (build "
                "workflow/harness/netemu first)"
            )
        stats_path = Path(stats_out).resolve()
        stats_path.parent.mkdir(parents=True, exist_ok=True)
        stats_path.unlink(missing_ok=True)  # never mistake an old file for this run's counters
        out_path = stats_path.parent / "netemu.stdout.log"
        err_path = stats_path.parent / "netemu.stderr.log"
        out_f = out_path.open("wb")
        err_f = err_path.open("wb")
        self._emulator_logs = [out_f, err_f]
        self.emulator_stats_path = stats_path
        self.emulator_stderr_path = err_path
        argv = [
            *self.prefix("emulator"),
            str(binary.resolve()),
            *emulator_args(profile, self.emu_iface_a, self.emu_iface_b),
            "-stats-out",
            str(stats_path),
            *(["-seed", str(seed)] if seed is not None else []),
        ]
        log.info("starting emulator: %s", " ".join(argv))
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out_f, stderr=err_f, start_new_session=True
        )
        self.emulator_process = proc
        self._procs.append(proc)
        deadline = time.monotonic() + ready_timeout_s
        while True:
            ready = [
                line
                for line in out_path.read_text(errors="replace").splitlines()
                if line.startswith(READY_PREFIX)
            ]
            if ready:
                log.info("emulator ready: %s", ready[0])
                return argv
            if proc.poll() is not None:
                raise SandboxError(
                    f"netemu exited with code {proc.returncode} before printing "
                    f"{READY_PREFIX!r}; argv: {' '.join(argv)}; stderr ({err_path}): "
                    f"{_tail(err_path)}"
                )
            if time.monotonic() > deadline:
                self.stop_emulator(strict=False)
                raise SandboxError(
                    f"netemu did not print {READY_PREFIX!r} within {ready_timeout_s} s; argv: "
                    f"{' '.join(argv)}; stderr ({err_path}): {_tail(err_path)}"
                )
            time.sleep(0.01)

    def stop_emulator(self, strict: bool = True) -> dict[str, Any] | None:
        """SIGTERM netemu's process group, wait for it, and return its JSON counters.

        With strict, raises SandboxError if it had to be killed or wrote no valid counters.
        Idempotent: later calls return the same counters.
        """
        proc = self.emulator_process
        if proc is None:
            return None
        if not self._emulator_stopped:
            self._emulator_stopped = True
            problem = ""
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=self.kill_grace_s)
                except subprocess.TimeoutExpired:
                    problem = f"netemu ignored SIGTERM for {self.kill_grace_s} s and was killed"
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=5)
            for f in self._emulator_logs:
                f.close()
            if proc.returncode not in (0, -signal.SIGTERM) and not problem:
                problem = f"netemu exited with code {proc.returncode}"
            if self.emulator_stats_path is not None:
                try:
                    self.emulator_stats = json.loads(self.emulator_stats_path.read_text())
                except (OSError, ValueError) as exc:
                    problem = problem or f"no valid counters in {self.emulator_stats_path}: {exc}"
            if problem:
                log.warning("%s; stderr: %s", problem, _tail(self.emulator_stderr_path))
            self._emulator_problem = problem
        if strict and self._emulator_problem:
            raise SandboxError(
                f"{self._emulator_problem}; stderr ({self.emulator_stderr_path}): "
                f"{_tail(self.emulator_stderr_path)}"
            )
        return self.emulator_stats

    # -- teardown ---------------------------------------------------------------------------

    def close(self) -> None:
        """Kill every process in the namespaces, delete them, and check nothing is left.

        Runs after exceptions too (``__exit__``) and is idempotent. Raises SandboxError naming
        whatever could not be removed.
        """
        if self._closed or not self._opened:
            return
        problems: list[str] = []
        existing = [ns for ns in self.namespaces if ns in netns.list_netns()]
        # Players and server first, so the emulator's counters cover all their traffic.
        ends = [ns for ns in existing if ns != self.emulator_ns]
        problems += netns.kill_netns_processes(ends, self.kill_grace_s)
        try:
            self.stop_emulator(strict=False)
        except (OSError, subprocess.SubprocessError) as exc:
            problems.append(f"stopping netemu: {exc}")
        problems += netns.kill_netns_processes(existing, self.kill_grace_s)
        for proc in self._procs:  # reap our children, whatever namespace they ended up in
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    problems.append(f"pid {proc.pid} ({proc.args!r}) survived SIGKILL")
        for ns in existing:
            try:
                netns.delete(ns)  # its veth ends (and their peers) go with it
            except SandboxError as exc:
                problems.append(str(exc))
        mine = set(self.namespaces) | {iface for _, iface in self.links}
        problems += [item for item in netns.leftovers() if item.split(" ", 1)[1] in mine]
        if problems:
            raise SandboxError(
                f"sandbox {self.run_id!r} ({PREFIX}{self.short}-*) not fully removed: "
                + "; ".join(problems)
            )
        _remove_owner(self.short)
        self._closed = True


def _tail(path: Path | None, max_chars: int = 2000) -> str:
    if path is None:
        return "(none)"
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return "(unreadable)"
    return text[-max_chars:] if text else "(empty)"
