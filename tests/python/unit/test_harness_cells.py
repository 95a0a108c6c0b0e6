"""What the harness decides before it starts anything: a cell file's errors name the key, a
finished run is never redone, and the port it picks is free for TCP and UDP alike."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from prototypes.contract.processes import pick_free_port
from report import network
from workflow import layout
from workflow.harness import cell as cells
from workflow.harness import placement
from workflow.harness import run as harness


def test_finished_run_is_never_redone(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "status.json").write_text('{"status": "ok"}')
    (out / "sentinel").write_text("measured")
    cell = cells.validate(
        {"prototype": "prototypes/reference/prototype.yaml", "transport": "tcp", "players": 6,
         "workload": "idle", "duration_s": 1.5}
    )  # fmt: skip
    cell["cell_id"] = layout.derive_cell_id(cell)
    res = harness.run_cell(cell, out)
    assert res.status == "ok" and res.detail == "already complete"
    assert (out / "sentinel").read_text() == "measured"


def test_cell_errors_name_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "cell.json"
    bad.write_text(json.dumps({"prototype": "p", "transport": "tcp", "players": 0,
                               "workload": "dance", "duration_s": 1}))  # fmt: skip
    with pytest.raises(cells.CellError) as err:
        cells.load(bad)
    text = str(err.value)
    assert f"{bad}: key players: expected an integer >= 1" in text
    assert f"{bad}: key workload: expected one of idle, active," in text


def test_free_port_is_free_for_tcp_and_udp() -> None:
    port = pick_free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
        tcp.bind(("127.0.0.1", port))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", port))


_CELL = {"prototype": "prototypes/reference/prototype.yaml", "transport": "tcp", "players": 4,
         "workload": "idle", "duration_s": 1.0}  # fmt: skip


def test_placement_slurm_refuses_what_two_nodes_cannot_have() -> None:
    """The server and its players on different nodes have no namespaces and no emulator between
    them: such a cell is refused before it runs, naming the key."""
    with pytest.raises(cells.CellError, match="key network_profile: turbulent needs the emulator"):
        cells.validate({**_CELL, "placement": "slurm", "network_profile": "turbulent"})
    with pytest.raises(cells.CellError, match="key isolation: netns is not available"):
        cells.validate({**_CELL, "placement": "slurm", "isolation": "netns"})
    # lan impairs nothing: between nodes it is the cluster's own network.
    assert cells.validate({**_CELL, "placement": "slurm", "network_profile": "lan"})["placement"]
    assert cells.validate({**_CELL, "placement": "auto", "network_profile": "turbulent"})


def test_placement_auto_keeps_an_emulated_cell_on_one_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLURM_JOB_NODELIST", "node[1-2]")
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "2")
    where = placement.decide("auto", one_node_for="the profile turbulent needs the emulator")
    assert where.kind == "local"
    assert where.describe() == {
        "kind": "local",
        "note": "on one node of the 2-node allocation: the profile turbulent needs the emulator",
    }
    turbulent = cells.validate({**_CELL, "network_profile": "turbulent"})
    assert harness._place(turbulent).note is not None
    # Outside an allocation auto is this machine, with nothing to explain.
    monkeypatch.delenv("SLURM_JOB_NODELIST")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert placement.decide("auto", one_node_for="x") == placement.Placement("local")


def test_the_report_says_how_each_profile_was_applied() -> None:
    profiles = [
        {"name": "turbulent", "runs": 2, "impairs": True, "applied_by": ["netemu"],
         "isolation": ["userns"], "placement": ["local"],
         "notes": ["on one node of the 2-node allocation: the emulator"]},
        {"name": "lan", "runs": 3, "impairs": False, "applied_by": ["none"],
         "isolation": ["none"], "placement": ["slurm"]},
        {"name": "lossy", "runs": 1, "impairs": True, "applied_by": ["none"],
         "isolation": ["none"], "placement": ["local"]},
    ]  # fmt: skip
    words = network.profiles_words(profiles)
    assert words.startswith(
        "turbulent: applied by the user-space emulator between the server and its players "
        "(2 runs, isolation userns); on one node of the 2-node allocation: the emulator; "
        "lan: nothing to apply; between nodes, the cluster's own network (3 runs, isolation "
        "none); lossy: NOT APPLIED"
    ), words
    assert network.profiles_words(None) == "not recorded"
