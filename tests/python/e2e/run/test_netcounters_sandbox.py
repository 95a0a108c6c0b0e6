"""Exact accounting across a sandbox: N UDP datagrams of a known size from the players'
namespace to the server's must count as exactly N frames of payload + 8 (UDP) + 20 (IPv4) + 14
(Ethernet) bytes on the server's veth, and nothing else (static neighbours: no ARP; IPv6 off: no
router or MLD frames), read directly, through a pid, by the CSV sampler and through the emulator.
They need root and skip otherwise."""

from __future__ import annotations

import csv
import subprocess
import sys
import textwrap
from pathlib import Path

from monitors import netcounters
from monitors.netcounters import Counters, NetSampler
from workflow.harness import netprofiles as profiles
from workflow.harness.sandbox import NETEMU_BINARY, Sandbox

from support.marks import needs_netemu, needs_sandbox

pytestmark = needs_sandbox

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


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


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


def test_veth_counters_are_exact(tmp_path: Path) -> None:
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


def test_counters_through_a_pid_match_the_namespace() -> None:
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


@needs_netemu
def test_counters_are_exact_through_the_emulator(tmp_path: Path) -> None:
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
