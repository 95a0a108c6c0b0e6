"""Interface counters: parsing, the CSV sampler, the idle baseline, and exact accounting.

The exact-accounting tests send N UDP datagrams of a known size across a sandbox and expect
the server veth to count exactly N frames of payload + 8 (UDP) + 20 (IPv4) + 14 (Ethernet)
bytes, and nothing else (static neighbours: no ARP; IPv6 off: no router or MLD frames). They
need root and skip otherwise.
"""

from __future__ import annotations

import csv
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitors import netcounters
from monitors.netcounters import Baseline, Counters, NetSampler
from workflow.harness import netprofiles as profiles
from workflow.harness import sandbox
from workflow.harness.netns import leftovers
from workflow.harness.sandbox import NETEMU_BINARY, Sandbox

AVAILABLE, WHY = sandbox.isolation_available()
needs_sandbox = pytest.mark.skipif(not AVAILABLE, reason=f"no network namespaces here: {WHY}")

N_DATAGRAMS = 200
PAYLOAD_BYTES = 100
FRAME_BYTES = PAYLOAD_BYTES + 8 + 20 + 14
PORT = 9000

RECEIVER = textwrap.dedent(
    """
    import socket, sys
    n, port = int(sys.argv[1]), int(sys.argv[2])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    s.settimeout(5.0)
    print("ready", flush=True)
    got = 0
    try:
        while got < n:
            s.recv(65536)
            got += 1
    except TimeoutError:
        pass
    print(got, flush=True)
    """
)
SENDER = textwrap.dedent(
    """
    import socket, sys
    dst, port, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for i in range(n):
        s.sendto(bytes(size), (dst, port))
    """
)

NET_DEV = """\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     284       2    0    0    0     0          0         0      284       2    0    0    0     0       0          0
nsk-ab12cd-s0: 2556084   18002    1    3    0     0          0         0  3070300   18150    0    7    0     0       0          0
"""  # noqa: E501


def test_parse_net_dev() -> None:
    parsed = netcounters.parse_net_dev(NET_DEV)
    assert parsed["lo"] == Counters(284, 2, 0, 0, 284, 2, 0, 0)
    s0 = parsed["nsk-ab12cd-s0"]
    assert (s0.rx_bytes, s0.rx_packets, s0.rx_errors, s0.rx_dropped) == (2556084, 18002, 1, 3)
    assert (s0.tx_bytes, s0.tx_packets, s0.tx_errors, s0.tx_dropped) == (3070300, 18150, 0, 7)
    assert (s0 - parsed["lo"]).rx_bytes == 2556084 - 284
    assert s0.as_dict()["tx_dropped"] == 7


def test_read_own_namespace() -> None:
    counters = netcounters.read_counters()
    assert "lo" in counters
    with netcounters.CounterSource() as src:
        assert "lo" in src.read()
    with pytest.raises(ValueError, match="not both"):
        netcounters.read_counters(pid=1, netns="x")


def _baseline(rate: float, sd: float, slices: int = 10, slice_s: float = 0.5) -> Baseline:
    return Baseline(
        iface="eth0",
        duration_s=slices * slice_s,
        slice_s=slice_s,
        slices=slices,
        rx_bytes_per_s=rate,
        rx_packets_per_s=rate / 100,
        tx_bytes_per_s=rate,
        tx_packets_per_s=rate / 100,
        rx_bytes_sd=sd,
        rx_packets_sd=sd / 100,
        tx_bytes_sd=sd,
        tx_packets_sd=sd / 100,
    )


def test_subtract_baselines_flags_negative_and_noise() -> None:
    base = {"eth0": _baseline(rate=1000.0, sd=50.0)}
    # 10 s run: 10 000 B idle expected; noise = 3 x sqrt(20 x 50^2 + 20^2 x 50^2 / 10)
    big = {"eth0": Counters(60_000, 600, 0, 0, 9_000, 90, 0, 0)}
    rows = {r.field: r for r in netcounters.subtract_baselines(big, base, 10.0)}
    rx = rows["rx_bytes"]
    assert rx.baseline == pytest.approx(10_000) and rx.corrected == pytest.approx(50_000)
    assert rx.noise == pytest.approx(3 * (20 * 50**2 + 400 * 50**2 / 10) ** 0.5)
    assert not rx.negative and not rx.within_noise
    tx = rows["tx_bytes"]
    assert tx.corrected == pytest.approx(-1_000) and tx.negative and tx.within_noise
    assert netcounters.subtract_baselines(big, {}, 10.0) == []  # no baseline, no row


def test_measure_baseline_of_the_host() -> None:
    t0 = time.monotonic()
    base = netcounters.measure_baseline(0.2, 0.05)
    assert time.monotonic() - t0 < 1.0
    assert "lo" in base
    lo = base["lo"]
    assert lo.slices == 4 and lo.rx_bytes_per_s >= 0 and lo.rx_bytes_sd >= 0
    with pytest.raises(ValueError, match="slice_s"):
        netcounters.measure_baseline(0.1, 0.5)


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_net_sampler_writes_rows_per_sample(tmp_path: Path) -> None:
    out = tmp_path / "net.csv"
    with NetSampler(out, interval_s=0.05, ifaces=["lo"]) as sampler:
        time.sleep(0.2)
        # flushed per sample: readable while the sampler runs
        assert len(_read_csv(out)) >= 2
    rows = _read_csv(out)
    assert list(rows[0]) == list(netcounters.CSV_COLUMNS)
    assert {r["iface"] for r in rows} == {"lo"}
    assert len(rows) >= 4  # first (start), a few on the grid, last (stop)
    ts = [int(r["t_unix_ns"]) for r in rows]
    assert ts == sorted(ts)
    assert sampler.delta("lo").rx_bytes == int(rows[-1]["rx_bytes"]) - int(rows[0]["rx_bytes"])
    with pytest.raises(ValueError, match="nope0 not found"):
        NetSampler(None, ifaces=["nope0"]).start()


# -- exact accounting across a sandbox ---------------------------------------------------------


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    yield
    assert leftovers() == []


def _send_udp(sb: Sandbox) -> int:
    """N datagrams from the players' namespace to a receiver in the server's; returns how many
    the receiver got."""
    receiver = sb.spawn(
        "server",
        [sys.executable, "-c", RECEIVER, str(N_DATAGRAMS), str(PORT)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert receiver.stdout is not None
    assert receiver.stdout.readline().strip() == "ready"
    subprocess.run(
        [*sb.prefix("client"), sys.executable, "-c", SENDER, sb.server_addr, str(PORT),
         str(N_DATAGRAMS), str(PAYLOAD_BYTES)],
        check=True,
        timeout=20,
    )  # fmt: skip
    got = int(receiver.stdout.readline())
    receiver.wait(timeout=10)
    receiver.stdout.close()
    return got


def _assert_exact(delta: Counters, *, direction: str) -> None:
    if direction == "rx":
        assert (delta.rx_packets, delta.rx_bytes) == (N_DATAGRAMS, N_DATAGRAMS * FRAME_BYTES)
        assert (delta.tx_packets, delta.tx_bytes) == (0, 0)
    else:
        assert (delta.tx_packets, delta.tx_bytes) == (N_DATAGRAMS, N_DATAGRAMS * FRAME_BYTES)
        assert (delta.rx_packets, delta.rx_bytes) == (0, 0)
    assert delta.rx_dropped == delta.tx_dropped == 0


@needs_sandbox
def test_veth_counters_are_exact(tmp_path: Path, no_leftovers: None) -> None:
    out = tmp_path / "net.csv"
    with Sandbox("test-netcounters") as sb:
        server0 = netcounters.read_counters(None, sb.server_ns)[sb.server_iface]
        client0 = netcounters.read_counters(None, sb.client_ns)[sb.client_iface]
        sampler = NetSampler(out, 0.05, netns=sb.server_ns, ifaces=[sb.server_iface]).start()
        got = _send_udp(sb)
        sampler.stop()  # before the sandbox closes: its open file holds the namespace
        server1 = netcounters.read_counters(None, sb.server_ns)[sb.server_iface]
        client1 = netcounters.read_counters(None, sb.client_ns)[sb.client_iface]
    assert got == N_DATAGRAMS
    _assert_exact(server1 - server0, direction="rx")
    _assert_exact(client1 - client0, direction="tx")
    _assert_exact(sampler.delta(sb.server_iface), direction="rx")
    rows = _read_csv(out)
    assert {r["iface"] for r in rows} == {sb.server_iface}
    first, last = rows[0], rows[-1]
    assert int(last["rx_packets"]) - int(first["rx_packets"]) == N_DATAGRAMS
    assert int(last["rx_bytes"]) - int(first["rx_bytes"]) == N_DATAGRAMS * FRAME_BYTES


@needs_sandbox
def test_counters_through_a_pid_match_the_namespace(no_leftovers: None) -> None:
    with Sandbox("test-netcounters-pid") as sb:
        sleeper = sb.spawn("server", ["sleep", "30"])
        by_pid = netcounters.read_counters(sleeper.pid)
        by_ns = netcounters.read_counters(None, sb.server_ns)
        with netcounters.CounterSource(pid=sleeper.pid) as src:
            sleeper.kill()
            sleeper.wait()
            # still readable after the process is gone: the open file holds the namespace
            assert set(src.read()) == {"lo", sb.server_iface}
    assert set(by_pid) == set(by_ns) == {"lo", sb.server_iface}
    assert by_pid[sb.server_iface] == by_ns[sb.server_iface]


@needs_sandbox
@pytest.mark.skipif(
    not NETEMU_BINARY.is_file(),
    reason=f"{NETEMU_BINARY} not built yet (build workflow/harness/netemu)",
)
def test_counters_are_exact_through_the_emulator(tmp_path: Path, no_leftovers: None) -> None:
    with Sandbox("test-netcounters-emu", emulator=True) as sb:
        sb.start_emulator(profiles.get_profile("lan-emulated"), NETEMU_BINARY,
                          tmp_path / "stats.json")  # fmt: skip
        server0 = netcounters.read_counters(None, sb.server_ns)[sb.server_iface]
        got = _send_udp(sb)
        server1 = netcounters.read_counters(None, sb.server_ns)[sb.server_iface]
        stats = sb.stop_emulator()
    assert got == N_DATAGRAMS
    _assert_exact(server1 - server0, direction="rx")
    assert stats is not None
    assert stats["ab"]["frames_out"] == N_DATAGRAMS
    assert stats["ab"]["bytes_out"] == N_DATAGRAMS * FRAME_BYTES
    assert stats["ba"]["frames_out"] == 0
