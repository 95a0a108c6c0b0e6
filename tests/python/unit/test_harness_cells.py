"""What the harness decides before it starts anything: a cell file's errors name the key, a
finished run is never redone, and the port it picks is free for TCP and UDP alike."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from prototypes.contract.processes import pick_free_port
from workflow import layout
from workflow.harness import cell as cells
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
