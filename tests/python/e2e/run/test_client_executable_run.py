"""A run of the fake prototype whose clients are another program (the manifest's
client_executable, as a Unity project's client build is): the clients run it, the record names
it, and provenance hashes both programs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from workflow import layout
from workflow.harness import cell as cells
from workflow.harness import run as harness

from support.paths import FAKE_MANIFEST, FAKE_PROTOTYPE, REPO


def _fake_doc() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(FAKE_MANIFEST.read_text())
    doc["executable"] = str(FAKE_PROTOTYPE)  # absolute: the manifest is written elsewhere
    return doc


def _write_client(directory: Path, marker: Path) -> Path:
    """A client program of its own: notes that it ran, then behaves as the fake prototype."""
    path = directory / "client.py"
    path.write_text(
        "import runpy, sys\n"
        f"sys.path[:0] = [{str(REPO)!r}, {str(FAKE_PROTOTYPE.parent)!r}]\n"
        f"open({str(marker)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        f"runpy.run_path({str(FAKE_PROTOTYPE)!r}, run_name='__main__')\n"
    )
    return path


def test_harness_starts_clients_from_client_executable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of the fake prototype whose clients are another program: the clients run it (its
    marker), the record names it, and provenance hashes both programs."""
    monkeypatch.delenv("FAKE_PROTOTYPE_MODE", raising=False)
    marker = tmp_path / "client-ran.txt"
    proto = tmp_path / "proto"
    proto.mkdir()
    client = _write_client(proto, marker)
    doc = _fake_doc()
    doc["client_executable"] = "client.py"
    (proto / "prototype.yaml").write_text(yaml.safe_dump(doc))
    cell = cells.validate(
        {
            "prototype": str(proto / "prototype.yaml"),
            "transport": "tcp",
            "players": 2,
            "workload": "idle",
            "duration_s": 0.5,
            "sample_interval_s": 0.25,
            "connect_timeout_s": 10,
            "baseline_s": 0.2,
            "isolation": "none",
        }
    )
    cell["cell_id"] = layout.derive_cell_id(cell)
    res = harness.run_cell(cell, tmp_path / "run")
    assert res.status == "ok", res.detail
    assert "-role client" in marker.read_text()
    assert "-role server" not in marker.read_text()
    meta = json.loads((res.path / "meta.json").read_text())
    assert meta["commands"]["server"][1] == str(FAKE_PROTOTYPE)
    assert [argv[1] for argv in meta["commands"]["clients"]] == [str(client)]
    [record] = meta["versions"]["prototypes"]
    assert record["executable"]["sha256"] == hashlib.sha256(FAKE_PROTOTYPE.read_bytes()).hexdigest()
    assert record["client_executable"]["sha256"] == hashlib.sha256(client.read_bytes()).hexdigest()
    assert record["build_external"] is None
