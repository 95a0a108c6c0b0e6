"""`netstick bisect --prototype reference`: the reference prototype built against two released
versions of kcp-go (the Go module proxy served from this machine's module cache, no network),
the nightly's kcp cell run through the harness with each, interleaved in pairs, and the runs'
RTT compared.

Two adjacent versions keep it short (the endpoint check alone: 3 runs a side of a 2 s window);
whichever way it decides, every run must be of the build it says: the library version each
process records is the candidate's."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from support.marks import needs_go
from support.paths import NETSTICK

KCP = "github.com/xtaci/kcp-go/v5"
GOOD, BAD = "v5.6.24", "v5.6.72"


def module_cache_proxy() -> Path:
    """The module cache's download directory: a module proxy the go command reads as file://."""
    out = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip()) / "cache" / "download"


@needs_go
def test_bisect_runs_the_cell_with_each_candidates_build(tmp_path: Path) -> None:
    proxy = module_cache_proxy()
    at_v = proxy / KCP / "@v"
    if not all((at_v / f"{v}.zip").is_file() for v in (GOOD, BAD)):
        pytest.skip(f"{KCP} {GOOD} and {BAD} are not in the module cache (make versions)")
    # The cache's list may name versions it holds no zip of; only these two are bisected.
    env = {**os.environ, "GOPROXY": f"file://{proxy}", "GOSUMDB": "off"}
    out = tmp_path / "bisection.json"
    work = tmp_path / "work"
    argv = [
        str(NETSTICK), "bisect", "--prototype", "reference", "--transport", "kcp",
        "--good", GOOD, "--bad", BAD, "--runs", "3", "--max-runs", "3", "--duration-s", "2",
        "--night-id", "n1", "--work-dir", str(work), "--out", str(out),
    ]  # fmt: skip
    res = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == 1 and doc["library"] == KCP and doc["metric"] == "rtt_net_p50_us"
    assert doc["campaign"] == "nightly" and doc["night_id"] == "n1"
    # The nightly's pinned kcp cell, its window shortened (so named for its own window).
    assert doc["cell"] == "reference-kcp-p100-active-lan-d2"
    assert doc["candidates"] == [GOOD, BAD]
    [step] = doc["steps"]
    assert (step["candidate"], step["against"], step["runs_per_side"]) == (BAD, GOOD, 3)
    if doc["status"] == "found":
        assert (doc["first_bad"], doc["last_good"]) == (BAD, GOOD)
    else:
        assert doc["bound"].startswith("no regression between the endpoints")

    runs = sorted(r for r in (work / "runs").iterdir() if r.is_dir())
    assert len(runs) == 6
    labels = [r.name.split("-", 1)[1] for r in runs]
    # Interleaved: every pair of consecutive runs is one of each build.
    assert all(sorted(labels[i : i + 2]) == [GOOD, BAD] for i in range(0, 6, 2)), labels
    for run, version in zip(runs, labels, strict=True):
        assert json.loads((run / "status.json").read_text())["status"] == "ok"
        for meta in (run / "logs").glob("*.meta.json"):
            recorded = json.loads(meta.read_text())["library_versions"]
            assert recorded[KCP] == version, (run.name, meta.name)
