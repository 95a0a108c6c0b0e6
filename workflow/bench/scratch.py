"""The workflow on a scratch campaign: Snakemake run as `make run` runs it, on a campaign of its
own, with everything it writes under one directory (root):

    root/<name>.yaml    the campaign (campaign_file)
    root/work/          Snakemake's working directory and its state (.snakemake/)
    root/data/          data_dir: raw/<name>/ and results/<name>/
    root/report/        report_dir
    root/snakemake.log  Snakemake's output, when `complete` ran it

The benches that run campaigns (campaign, nightly, versions, history, the fault drill) and the
workflow's tests run Snakemake only through here, and compare a campaign's finished runs before
and after something happened to it with `finished` and `lost_and_changed`.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from workflow.files import REPO, sha256_of

SNAKEMAKE = Path(sys.executable).with_name("snakemake")
SNAKEFILE = REPO / "Snakefile"


def campaign_doc(
    name: str,
    description: str,
    prototype: Mapping[str, Any],
    *,
    block: str,
    seed: int,
    repetitions: int,
    defaults: Any,
    players: Sequence[int] = (2,),
    workloads: Sequence[str] = ("idle",),
    **block_keys: Any,
) -> dict[str, Any]:
    """A campaign of one matrix block: one prototype (name, manifest, transports, versions...)
    at the given player counts and workloads; block_keys adds the block's other keys
    (network_profiles, ...)."""
    return {
        "name": name,
        "description": description,
        "seed": seed,
        "repetitions": repetitions,
        "defaults": defaults,
        "matrix": [
            {
                "name": block,
                "prototypes": [dict(prototype)],
                "players": list(players),
                "workloads": [{"name": w} for w in workloads],
                **block_keys,
            }
        ],
    }


def campaign_file(root: Path, doc: Mapping[str, Any]) -> Path:
    """Write doc as root/<name>.yaml (a campaign's name is its file's) and return the path."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{doc['name']}.yaml"
    path.write_text(yaml.safe_dump(dict(doc), sort_keys=False))
    return path


def argv(
    root: Path,
    campaign: str | Path | None,
    *extra: str,
    config: Sequence[str] = (),
    targets: Sequence[str | Path] = (),
) -> list[str]:
    """Snakemake's command line for campaign (a name or file; None: the Snakefile's default)
    under root; extra: Snakemake's own options; config: more `--config` settings; targets: the
    files to make instead of everything."""
    settings = [*([f"campaign={campaign}"] if campaign is not None else [])]
    settings += [f"data_dir={root / 'data'}", f"report_dir={root / 'report'}", *config]
    return [
        str(SNAKEMAKE), "-s", str(SNAKEFILE), "-d", str(root / "work"), *extra,
        "--config", *settings, *(["--", *map(str, targets)] if targets else []),
    ]  # fmt: skip


def run(
    root: Path,
    campaign: str | Path | None,
    *extra: str,
    config: Sequence[str] = (),
    targets: Sequence[str | Path] = (),
    timeout_s: float = 300,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run Snakemake (see argv) to its exit, its output captured."""
    (root / "work").mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        argv(root, campaign, *extra, config=config, targets=targets),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=dict(env) if env is not None else None,
    )


def popen(
    root: Path,
    campaign: str | Path | None,
    *extra: str,
    config: Sequence[str] = (),
    targets: Sequence[str | Path] = (),
    log: Path | None = None,
) -> subprocess.Popen[str]:
    """Start Snakemake (see argv) without waiting, in its own process group (so a caller can
    signal all of it, or Snakemake alone); its output to log, or to a pipe."""
    (root / "work").mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(log.open("w")) if log is not None else subprocess.PIPE
        return subprocess.Popen(
            argv(root, campaign, *extra, config=config, targets=targets),
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )


def complete(
    root: Path,
    campaign: str | Path,
    *extra: str,
    config: Sequence[str] = (),
    targets: Sequence[str | Path] = (),
    timeout_s: float = 3600,
    env: Mapping[str, str] | None = None,
) -> float:
    """Run the campaign to its end (report included) or to targets, as `make run` does; the
    wall seconds from Snakemake's start to its exit. Its output goes to root/snakemake.log; a
    failure raises RuntimeError with the log's last lines. env: as run's (a bench's planted
    campaign: workflow.campaign.benchmark.bench_env(root))."""
    t0 = time.monotonic()
    res = run(root, campaign, *extra, config=config, targets=targets, timeout_s=timeout_s, env=env)
    wall_s = time.monotonic() - t0
    log = root / "snakemake.log"
    log.write_text(res.stdout + res.stderr)
    if res.returncode != 0:
        tail = "\n".join((res.stdout + res.stderr).splitlines()[-20:])
        raise RuntimeError(
            f"campaign {campaign}: snakemake exited {res.returncode}; see {log}:\n{tail}"
        )
    return wall_s


# -- what a campaign's raw data hold ------------------------------------------------------------


def tree_digest(path: Path) -> dict[str, str]:
    """sha256 of path (a file) or of every file under it, by name relative to path's parent:
    equal digests, byte-identical trees."""
    paths = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return {str(p.relative_to(path.parent)): sha256_of(p) for p in paths}


def records(raw: Path) -> dict[str, dict[str, Any]]:
    """The run records of a raw campaign directory that can be read, by run key."""
    out = {}
    for path in sorted(raw.glob("*/r*.json")):
        with contextlib.suppress(OSError, ValueError):
            out[f"{path.parent.name}/{path.stem}"] = json.loads(path.read_text())
    return out


def finished(raw: Path) -> dict[str, dict[str, str]]:
    """The finished runs (record with status ok): run key -> digest of record and run directory."""
    out = {}
    for key, rec in records(raw).items():
        if rec.get("status") == "ok":
            cell, run_id = key.split("/")
            out[key] = tree_digest(raw / cell / f"{run_id}.json") | tree_digest(raw / cell / run_id)
    return out


def lost_and_changed(
    before: Mapping[str, dict[str, str]], after: Mapping[str, dict[str, str]]
) -> tuple[int, int]:
    """How many of the runs finished before are gone after, and how many differ."""
    lost = sum(1 for k in before if k not in after)
    changed = sum(1 for k in before if k in after and after[k] != before[k])
    return lost, changed
