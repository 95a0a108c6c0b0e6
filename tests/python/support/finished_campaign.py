"""A small finished campaign `fake` as the facts step and the check-list read it: its raw
directory (written through support/raw_campaign.py) and a results directory with a few stats
tables, plus the sizes and times a test compares the facts with. unit/test_artifact.py and
unit/test_crate.py build theirs with make_campaign."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from report import checklist
from stats import analyse
from workflow.campaign import facts

from support.paths import REPO
from support.raw_campaign import RawCampaign, cell

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class FakeCampaign:
    raw: Path
    results: Path
    raw_bytes: int = 0
    raw_files: int = 0
    results_bytes: int = 0
    spans: list[tuple[int, int]] = field(default_factory=list)
    windows_s: float = 0.0
    overhead_s: float = 0.0


def _meta(commit: str, start_ns: int, window_s: float, overhead_s: float) -> dict[str, Any]:
    # The shape of a harness meta.json (workflow/harness/run.py), trimmed.
    window_start = start_ns + 300_000_000
    window_end = window_start + int(window_s * 1e9)
    return {
        "schema": 1,
        "campaign": "fake",
        "start_unix_ns": start_ns,
        "end_unix_ns": window_end + 200_000_000,
        "window_start_unix_ns": window_start,
        "window_end_unix_ns": window_end,
        "overhead_s": overhead_s,
        "phases_s": {"sandbox": 0.1, "measurement": window_s, "stop": 0.03},
        "isolation": "netns",
        "placement": {"kind": "local"},
        "job": {"host": "fakehost", "pid": 1, "slurm_job_id": None},
        "versions": {
            "git": {"commit": commit, "dirty": False},
            "go_version": "go1.26.8",
            "go_modules": {"github.com/xtaci/kcp-go/v5": "v5.6.72"},
            "kernel": "6.1.0-fake",
            "os": "Linux-6.1.0-fake-x86_64-with-glibc2.36",
            "cpu_model": "Fake CPU",
            "cpu_count": 4,
            "cpu_governor": None,
            "hostname": "fakehost",
            "python_version": "3.11.7",
        },
    }


def make_campaign(root: Path, commit: str = COMMIT) -> FakeCampaign:
    """root/raw/fake with 2 cells x 2 runs: two ok, one failed (one kept attempt), one not run;
    root/results/fake with cells.csv, findings.json and metrics.json only (runs.parquet,
    ingest.json missing)."""
    raw = RawCampaign(root / "raw", "fake")
    fake = FakeCampaign(raw=raw.dir, results=root / "results" / "fake")
    # The shape of plan.json's cells (workflow/campaign/expand.py), trimmed.
    tcp1, tcp2, kcp1, _kcp2 = (
        cell(c, r, campaign="fake", transport=t, duration_s=2.0, seed=7)
        for c, r, t in (
            ("fake-tcp-p2-aaaa", "r1", "tcp"),
            ("fake-tcp-p2-aaaa", "r2", "tcp"),
            ("fake-kcp-p2-bbbb", "r1", "kcp"),
            ("fake-kcp-p2-bbbb", "r2", "kcp"),
        )
    )
    raw.plan(
        [tcp1, tcp2, kcp1, _kcp2],
        plan_schema=1,
        seed=4242,
        order="seeded shuffle",
        cells_total=2,
        runs_total=4,
        estimate_s=20.0,
        unavailable=[],
    )
    t0 = 1_700_000_000_000_000_000
    for ok, start, window_s, overhead_s in ((tcp1, t0, 2.0, 0.5), (kcp1, t0 + 5 * 10**9, 2.1, 0.6)):
        meta = _meta(commit, start, window_s, overhead_s)
        raw.ok(
            ok,
            meta=meta,
            files={
                "status.json": {"status": "ok"},
                "logs/client-0.rtt.csv": "t_unix_ns,player,seq,rtt_us,kind\n",
            },
            record={"status": "ok", "run_id": ok["run_id"]},
        )
        fake.spans.append((meta["start_unix_ns"], meta["end_unix_ns"]))
        fake.windows_s += (meta["window_end_unix_ns"] - meta["window_start_unix_ns"]) / 1e9
        fake.overhead_s += overhead_s
    # The failed run: its last attempt kept with its own meta.json, later than every ok run.
    failed_meta = _meta(commit, t0 + 20 * 10**9, 2.0, 9.0)
    raw.failed(
        tcp2,
        {"status": "failed", "reason": "not_ready"},
        {"20240101T000000-1": {"meta.json": failed_meta, "status.json": {"status": "failed"}}},
    )
    fake.spans.append((failed_meta["start_unix_ns"], failed_meta["end_unix_ns"]))
    fake.raw_bytes, fake.raw_files = raw.bytes, len(raw.written)

    fake.results.mkdir(parents=True)
    for name, text in (
        ("cells.csv", "cell_id,metric,estimate\nfake-tcp-p2-aaaa,rtt_net_p50_us,80.5\n"),
        ("findings.json", json.dumps({"findings": [{"kind": "warmup"}, {"kind": "failed"}]})),
        ("metrics.json", json.dumps(analyse.metrics_doc())),
    ):
        (fake.results / name).write_text(text)
        fake.results_bytes += len(text.encode())
    return fake


def collect(results: Path, raw: Path, repo: Path = REPO) -> dict[str, Any]:
    """The workflow's two steps: the facts, then the check-list."""
    facts.write(results, raw, repo)
    return checklist.collect(results)
