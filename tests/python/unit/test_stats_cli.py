"""`netstick stats` pieces and `netstick compare` on synthetic runs tables."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from stats import analyse
from workflow.cli import main as cli_main


def _runs(rng: np.random.Generator, slow: float = 1.0, reps: int = 10) -> pl.DataFrame:
    rows = []
    for transport, base_ms in (("tcp", 1.0), ("kcp", 2.0)):
        for players in (20, 100, 200):
            for k in range(reps):
                factor = slow if transport == "kcp" else 1.0
                p50 = base_ms * 1000 * (1 + players / 100) * factor * rng.lognormal(0, 0.03)
                rows.append(
                    {
                        "campaign": "syn", "cell_id": f"{transport}-p{players}",
                        "run_id": f"r{k + 1}", "prototype": "reference", "transport": transport,
                        "players": players, "workload": "idle", "params": "{}",
                        "network_profile": "lan", "duration_s": 60.0, "status": "ok",
                        "rtt_net_p50_us": p50, "rtt_net_p99_us": 3 * p50,
                        "server_cpu_cores": 0.01 * players * rng.lognormal(0, 0.05),
                    }
                )  # fmt: skip
    return pl.DataFrame(rows)


def test_analyse_writes_cells_comparisons_and_findings(tmp_path: Path) -> None:
    _runs(np.random.default_rng(1)).write_parquet(tmp_path / "runs.parquet")
    doc = analyse.analyse(tmp_path)
    cells = pl.read_csv(tmp_path / "cells.csv")
    p50 = cells.filter(pl.col("metric") == "rtt_net_p50_us")
    assert p50.height == 6 and p50["note"].null_count() == 6  # 10 runs: every cell has an interval
    assert (p50["ci_low"] <= p50["estimate"]).all() and (p50["estimate"] <= p50["ci_high"]).all()
    kinds = {f["kind"] for f in doc["findings"]}
    assert {"scaling", "slope", "comparison"} <= kinds
    growth = [
        f for f in doc["findings"] if f["kind"] == "scaling" and f["context"]["transport"] == "kcp"
    ]
    # kcp p50 grows from 2*1.2 to 2*3 ms: 2.5x
    low, high = growth[0]["interval"]
    assert growth[0]["unit"] == "ratio" and low <= 2.5 <= high
    assert (tmp_path / "comparisons.parquet").is_file()
    json.loads((tmp_path / "findings.json").read_text())  # valid JSON, no NaN


def test_compare_flags_a_regression_and_finds_change_points(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(2)
    dirs = []
    for i, slow in enumerate((1.0, 1.0, 1.0, 1.2)):
        d = tmp_path / f"night{i}"
        d.mkdir()
        _runs(rng, slow).write_parquet(d / "runs.parquet")
        dirs.append(str(d))
    out = tmp_path / "verdicts.json"
    code = cli_main(["compare", *dirs, "--out", str(out)])
    assert code == 1  # a regression was found
    doc = json.loads(out.read_text())
    verdicts = {c["cell_id"]: c["verdict"] for c in doc["cells"]}
    assert all(verdicts[f"kcp-p{p}"] == "regression" for p in (20, 100, 200))
    assert all(verdicts[f"tcp-p{p}"] != "regression" for p in (20, 100, 200))
    assert "change_points" in doc
    assert "regression" in capsys.readouterr().out


def test_compare_and_stats_name_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert "runs.parquet" in capsys.readouterr().err
    assert cli_main(["stats", "nope", "--data-dir", str(tmp_path)]) == 2
    assert "plan.json" in capsys.readouterr().err
