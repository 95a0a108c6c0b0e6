"""Run the real workflow (Snakemake + harness) on small campaigns of the fake prototype, in a
temporary directory that holds the campaign, the manifest, the data and Snakemake's state."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
FAKE_DIR = Path(__file__).parent


def fake_manifest(dest: Path, environment: Mapping[str, str] | None = None) -> Path:
    """A copy of the fake prototype's manifest (and script) with its own environment."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(FAKE_DIR / "fake_prototype.py", dest / "fake_prototype.py")
    doc = yaml.safe_load((FAKE_DIR / "fake-prototype.yaml").read_text())
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
    doc = {
        "name": name,
        "description": "test campaign of the fake prototype",
        "seed": seed,
        "repetitions": repetitions,
        "defaults": {"duration_s": duration_s, "network_profile": "lan", **(cell or {})},
        "matrix": [
            {
                "name": "fake",
                "prototypes": [{"name": "fake", "manifest": str(manifest), "transports": ["tcp"]}],
                "players": list(players),
                "workloads": [{"name": w} for w in workloads],
            }
        ],
    }
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def argv(root: Path, campaign: Path, *extra: str, config: Sequence[str] = ()) -> list[str]:
    return [
        str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "-d", str(root / "work"),
        *extra, "--config", f"campaign={campaign}", f"data_dir={root / 'data'}",
        f"report_dir={root / 'report'}", *config,
    ]  # fmt: skip


def run(
    root: Path,
    campaign: Path,
    *extra: str,
    config: Sequence[str] = (),
    timeout_s: float = 300,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    (root / "work").mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        argv(root, campaign, *extra, config=config),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=dict(env) if env is not None else None,
    )


def popen(
    root: Path, campaign: Path, *extra: str, config: Sequence[str] = ()
) -> subprocess.Popen[str]:
    (root / "work").mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        argv(root, campaign, *extra, config=config),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, so a test can kill all of it
    )


def tree_digest(path: Path) -> dict[str, str]:
    """sha256 of every file under path, by relative name (for byte-identical checks)."""
    out = {}
    for p in sorted(path.rglob("*")):
        if p.is_file():
            out[str(p.relative_to(path))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def ok_run_dirs(raw: Path) -> list[Path]:
    return sorted(
        p.parent for p in raw.glob("*/r*/status.json") if p.parent.name.removeprefix("r").isdigit()
    )


def records(raw: Path) -> list[Path]:
    return sorted(raw.glob("*/r*.json"))


def environ_without_slurm() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
