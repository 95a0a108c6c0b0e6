"""workflow.layout: the raw layout's paths and the one walker over a campaign."""

from __future__ import annotations

from pathlib import Path

import pytest

from workflow import layout

from support.raw_campaign import RawCampaign

CELL = {
    "prototype": "prototypes/reference/prototype.yaml",
    "library_version": "pinned",
    "transport": "kcp",
    "players": 4,
    "workload": "stream",
    "params": {"size": "100", "rate": "30"},
    "transport_options": {"nodelay": "1"},
    "network_profile": "lan",
    "duration_s": 14.0,
}


def _campaign(root: Path) -> None:
    """Campaign t under root, four runs in plan order: ok on a workflow host, ok with only the
    harness's host name, failed after two kept attempts, and one that never ran."""
    raw = RawCampaign(root, "t")
    c21, c11, c12, c22 = (
        {**CELL, "cell_id": c, "run_id": r}
        for c, r in [("c2", "r1"), ("c1", "r1"), ("c1", "r2"), ("c2", "r2")]
    )
    raw.plan([c21, c11, c12, c22])
    raw.ok(c21, meta={"job": {"host": "node7"}, "versions": {"host": {"name": "builder"}}})
    raw.ok(c11, meta={"job": None, "versions": {"host": {"name": "laptop"}}})
    raw.failed(
        c12,
        {"status": "failed", "reason": "not_ready"},
        {
            stamp: {
                "status.json": {"status": "failed", "reason": "crashed"},
                "meta.json": {"job": {"slurm_job_id": job}},
            }
            for stamp, job in (("20240101T000001-1", "11"), ("20240101T000002-2", "12"))
        },
    )


def test_walk_yields_every_planned_run_in_plan_order(tmp_path: Path) -> None:
    raw = tmp_path / "t"
    _campaign(tmp_path)
    runs = list(layout.walk(raw))
    assert [r.key for r in runs] == ["c2/r1", "c1/r1", "c1/r2", "c2/r2"]
    assert [r.status for r in runs] == ["ok", "ok", "failed", "not_run"]
    assert runs[0].run_dir == layout.run_dir("t", "c2", "r1", tmp_path)
    assert {r.campaign for r in runs} == {"t"} and runs[0].block == "b"


def test_host_is_the_jobs_host_else_the_harness_host_name(tmp_path: Path) -> None:
    raw = tmp_path / "t"
    _campaign(tmp_path)
    hosts = [r.host for r in layout.walk(raw)]
    assert hosts == ["node7", "laptop", None, None]


def test_failed_attempts_are_read_oldest_first_and_a_run_not_run_has_nothing(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "t"
    _campaign(tmp_path)
    _, _, failed, not_run = layout.walk(raw)
    assert [a.path.name for a in failed.failed] == ["20240101T000001-1", "20240101T000002-2"]
    assert [(a.status or {}).get("reason") for a in failed.failed] == ["crashed", "crashed"]
    assert [(a.meta or {})["job"]["slurm_job_id"] for a in failed.failed] == ["11", "12"]
    assert failed.record == {"status": "failed", "reason": "not_ready"} and failed.meta is None
    assert (not_run.record, not_run.meta, not_run.failed) == (None, None, ())


def test_the_harness_writes_the_names_the_readers_find(tmp_path: Path) -> None:
    out = tmp_path / "cell" / "r1"
    work = layout.work_dir(out, 42)
    work.mkdir(parents=True)
    assert layout.work_dirs(out) == [(work, 42)]
    first = layout.attempt_dir(out, 42)
    first.mkdir(parents=True)
    second = layout.attempt_dir(out, 42)  # the same process within the same second
    assert first.parent == second.parent == layout.failed_dir(out)
    assert second != first and second.name.startswith(first.name)
    (first / "status.json").write_text('{"reason": "crashed"}')
    assert [a.path for a in layout.failed_attempts(out)] == [first]
    assert layout.stale_dir(out).parent == layout.failed_dir(out)


def test_walk_takes_a_plan_in_memory_and_needs_one(tmp_path: Path) -> None:
    raw = tmp_path / "t"
    with pytest.raises(FileNotFoundError, match=r"plan\.json"):
        list(layout.walk(raw))
    plan = {
        "campaign": "t",
        "runs": [{"block": "b", "cell": {**CELL, "cell_id": "c", "run_id": "r"}}],
    }
    [run] = layout.walk(raw, plan)
    assert (run.key, run.status) == ("c/r", "not_run")


def test_derive_cell_id_names_the_cell_and_leaves_out_repetition_and_seed() -> None:
    cid = layout.derive_cell_id(CELL)
    assert cid == "reference-kcp-p4-stream-rate=30-size=100-t.nodelay=1-lan-d14"
    assert layout.derive_cell_id({**CELL, "run_id": "r9", "seed": 5}) == cid
    custom = layout.derive_cell_id({**CELL, "network_profile": {"delay_ms": 20}})
    assert custom.startswith("reference-kcp-p4-") and "-custom" in custom
