"""The real workflow (Snakemake + harness) on small campaigns of the fake prototype: its
manifest and campaign files, and what the runs left. Snakemake itself runs through the scratch
runner the benches use (workflow/bench/scratch.py: root/work, root/data, root/report under a
temporary directory)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from workflow.bench import scratch

from support.paths import FAKE_MANIFEST, FAKE_PROTOTYPE


def fake_manifest(dest: Path, environment: Mapping[str, str] | None = None) -> Path:
    """A copy of the fake prototype's manifest (and script) with its own environment."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(FAKE_PROTOTYPE, dest / FAKE_PROTOTYPE.name)
    doc = yaml.safe_load(FAKE_MANIFEST.read_text())
    doc["environment"] = dict(environment or {})
    path = dest / "prototype.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def campaign_file(
    root: Path,
    name: str,
    manifest: Path,
    *,
    players: Sequence[int] = (2,),
    workloads: Sequence[str] = ("idle",),
    repetitions: int = 2,
    duration_s: float = 1.0,
    seed: int = 5,
    cell: Mapping[str, Any] | None = None,
) -> Path:
    """root/<name>.yaml: the fake prototype over TCP at the player counts and workloads."""
    doc = scratch.campaign_doc(
        name,
        "test campaign of the fake prototype",
        {"name": "fake", "manifest": str(manifest), "transports": ["tcp"]},
        block="fake",
        seed=seed,
        repetitions=repetitions,
        defaults={"duration_s": duration_s, "network_profile": "lan", **(cell or {})},
        players=players,
        workloads=workloads,
    )
    return scratch.campaign_file(root, doc)


def ok_run_dirs(raw: Path) -> list[Path]:
    return sorted(
        p.parent for p in raw.glob("*/r*/status.json") if p.parent.name.removeprefix("r").isdigit()
    )


def environ_without_slurm() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
