"""Findings are records in stats and sentences only in report/sentences.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from report import sentences
from stats import analyse

CAMPAIGN_KINDS = {
    "scaling", "threshold", "slope", "comparison", "inconclusive", "warmup", "failed",
}  # fmt: skip
# Free text a record may carry: the reasons the stats functions give when they cannot estimate.
NOTE_KEYS = {"note", "notes"}


def _runs(reps: int, rtt_ms: dict[int, float], rng: np.random.Generator) -> pl.DataFrame:
    rows = []
    for transport, factor in (("tcp", 1.0), ("kcp", 1.4)):
        for players, ms in rtt_ms.items():
            for k in range(reps):
                p50 = ms * 1000 * factor * rng.lognormal(0, 0.03)
                rows.append(
                    {
                        "campaign": "syn", "cell_id": f"{transport}-p{players}",
                        "run_id": f"r{k + 1}", "prototype": "reference", "transport": transport,
                        "players": players, "workload": "idle", "params": '{"size": "S"}',
                        "network_profile": "lan", "duration_s": 30.0, "status": "ok",
                        "rtt_net_p50_us": p50, "rtt_net_p95_us": 1.5 * p50,
                        "rtt_net_p99_us": 2 * p50,
                        "server_cpu_cores": 0.01 * players * rng.lognormal(0, 0.05),
                        "warmup_second_half": False,
                    }
                )  # fmt: skip
    return pl.DataFrame(rows)


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Two campaigns' findings: 10 runs per cell (comparisons are significant) and 3 runs per
    cell crossing the 50 and 75 ms thresholds, with a failed and an unsettled run (nothing can
    be significant, no cell has an interval)."""
    rng = np.random.default_rng(3)
    out = []
    many = _runs(10, {20: 1.0, 100: 2.0, 200: 3.0}, rng)
    few = _runs(3, {20: 30.0, 200: 80.0}, rng).with_columns(
        status=pl.when((pl.col("cell_id") == "kcp-p20") & (pl.col("run_id") == "r3"))
        .then(pl.lit("failed"))
        .otherwise(pl.col("status")),
        warmup_second_half=(pl.col("cell_id") == "tcp-p200") & (pl.col("run_id") == "r1"),
    )
    for name, runs in (("many", many), ("few", few)):
        results = tmp_path_factory.mktemp(name)
        runs.write_parquet(results / "runs.parquet")
        analyse.analyse(results)
        out += json.loads((results / "findings.json").read_text())["findings"]
    return out


def _strings(node: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(key, text) of every string in node, recursively, notes left out."""
    if isinstance(node, str):
        yield key, node
    elif isinstance(node, dict):
        for k, v in node.items():
            if k not in NOTE_KEYS:
                yield from _strings(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v, key)


def test_findings_are_records_with_units_and_no_prose(findings: list[dict[str, Any]]) -> None:
    assert {f["kind"] for f in findings} == CAMPAIGN_KINDS
    for f in findings:
        assert {"kind", "context", "estimate", "interval", "unit"} <= set(f), f
        assert not {"statement", "sentence", "text"} & set(f), f
        assert isinstance(f["context"], dict) and f["context"], f
        assert f["unit"] in analyse.UNITS, f
        if f["interval"] is None:
            assert "level" not in f, f
        else:
            low, high = f["interval"]
            assert f["level"] == analyse.LEVEL
            if low is not None and high is not None:
                assert low <= high, f
        # Names and identifiers only: a sentence would contain spaces.
        for key, text in _strings(f):
            assert " " not in text, (f["kind"], key, text)


def test_every_unit_and_every_kind_has_a_way_to_be_said(findings: list[dict[str, Any]]) -> None:
    assert set(analyse.UNITS) <= set(sentences.SHOWN)
    assert set(sentences.kinds()) >= CAMPAIGN_KINDS
    for f in findings:
        said = sentences.sentence(f)
        assert said.strip() and "None" not in said, said
    with pytest.raises(ValueError, match="'nonsense'"):
        sentences.sentence({"kind": "nonsense", "context": {}})


def test_sentences_convert_through_the_one_table(findings: list[dict[str, Any]]) -> None:
    assert sentences.convert(1500.0, "us") == (1.5, "ms")
    assert sentences.convert(3 * 2.0**20, "bytes") == (3.0, "MiB")
    assert sentences.convert(None, "cores") == (None, "cores")
    with pytest.raises(ValueError, match="'furlongs'"):
        sentences.convert(1.0, "furlongs")
    slope = next(f for f in findings if f["kind"] == "slope")
    per_100_ms = sentences.convert(100 * slope["estimate"], slope["unit"])[0]
    assert f"changes by {sentences.fmt(per_100_ms)} ms per 100 players" in sentences.sentence(slope)
    crossing = next(f for f in findings if f["kind"] == "threshold")
    limit_ms = sentences.convert(crossing["context"]["threshold_us"], "us")[0]
    assert f"crosses {sentences.fmt(limit_ms)} ms at {crossing['estimate']:.0f} players" in (
        sentences.sentence(crossing)
    )
    failed = next(f for f in findings if f["kind"] == "failed")
    assert sentences.sentence(failed).startswith(f"{failed['estimate']} of ")
    assert failed["context"]["runs"] == ["kcp-p20/r3"]


def test_stats_writes_metrics_and_an_empty_change_point_table(tmp_path: Path) -> None:
    _runs(6, {20: 1.0, 100: 2.0}, np.random.default_rng(4)).write_parquet(tmp_path / "runs.parquet")
    analyse.analyse(tmp_path)
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert [m["name"] for m in metrics["metrics"]] == [m[0] for m in analyse.METRICS]
    assert {m["unit"] for m in metrics["metrics"] + metrics["series"]} <= set(analyse.UNITS)
    # No cell with several library versions: the table is empty but has its columns.
    changes = pl.read_csv(tmp_path / "changepoints.csv")
    assert changes.height == 0 and {"change_point", "version_order"} <= set(changes.columns)
