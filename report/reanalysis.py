"""The Net-Celerity re-analysis report: draws what stats.reanalysis computed.

    netstick reanalysis render data/results/net-celerity-reanalysis \
        --out report/_output/net-celerity-reanalysis/index.html [--pdf FILE.pdf]

Reads the re-analysis tables and findings.json, shapes what only the report needs (the
findings' sentences through report.sentences, the flaw table in words, the thresholds with their
meaning) into figure tables (--figures, by default a temporary directory), and renders
report/net-celerity.qmd with report.render. Nothing is computed here.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import polars as pl

from report import sentences
from report.render import render as render_qmd
from workflow.files import REPO, replace_atomically, write_json

DEFAULT_RESULTS: Final = REPO / "data" / "results" / "net-celerity-reanalysis"
DEFAULT_OUT: Final = REPO / "report" / "_output" / "net-celerity-reanalysis" / "index.html"
QMD: Final = Path(__file__).with_name("net-celerity.qmd")

# The thesis's thresholds (section 5.3) and what they mean for players.
THRESHOLD_MEANINGS: Final = {
    50.0: "FPS: latency noticed",
    75.0: "FPS: accuracy halved",
    100.0: "RPG and racing: latency noticed",
}
# Findings stated together, one sentence per group: kind -> (kind of the group, context keys
# that must agree). The members keep the order stats wrote them in.
GROUPED: Final = {
    "resource_slope": ("resource_slopes", ("metric", "workload_label")),
    "threshold_not_reached": ("thresholds_not_reached", ("metric",)),
    "nic_rate": ("nic_rates", ("direction", "players")),
}


class ReanalysisError(ValueError):
    """The tables directory cannot be drawn; the message names the file."""


def stated(findings: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The findings as the report states them: grouped kinds (GROUPED) merged into one record
    with ``members`` at the place of their first member, every other finding as it is."""
    out: list[dict[str, Any]] = []
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for f in findings:
        kind = str(f.get("kind"))
        if kind not in GROUPED:
            out.append(dict(f))
            continue
        group_kind, keys = GROUPED[kind]
        ctx = f.get("context") or {}
        key = (group_kind, *(ctx.get(k) for k in keys))
        if key not in groups:
            groups[key] = {
                "kind": group_kind,
                "context": {k: ctx.get(k) for k in keys},
                "members": [],
            }
            out.append(groups[key])
        groups[key]["members"].append(dict(f))
    return out


def describe_runs(cells: set[str], runs: pl.DataFrame) -> str:
    """Which runs a set of cells is, in words where it is a whole group: "all runs", "all Mirror
    KCP runs", "all workload 2: active runs of NFE (UTP)"; else the cell ids."""
    everyone = set(runs["cell_id"].to_list())
    if cells == everyone:
        return "all runs"

    def whole(column: str) -> list[str] | None:
        """The values of column whose runs together are exactly cells, if any."""
        values = sorted(
            {v for v, c in zip(runs[column], runs["cell_id"], strict=True) if c in cells}
        )
        covered = set(runs.filter(pl.col(column).is_in(values))["cell_id"].to_list())
        return values if covered == cells else None

    if (labels := whole("label")) is not None:
        return f"all {len(cells)} runs of " + ", ".join(labels)
    if (workloads := whole("workload_label")) is not None:
        return f"all {len(cells)} runs of " + ", ".join(workloads)
    return ", ".join(sorted(cells))


def _read(results: Path, name: str) -> pl.DataFrame:
    path = results / f"{name}.parquet"
    if not path.is_file():
        raise ReanalysisError(f"{path}: missing; run `netstick reanalysis compute` first")
    return pl.read_parquet(path)


def shape(results: Path) -> tuple[dict[str, pl.DataFrame], dict[str, Any]]:
    """The figure tables only the report needs (flaws_summary with applies_to, thresholds) and
    report.json: the findings' sentences, the dataset-wide flaws and the dataset as shown."""
    doc = sentences.load_findings(
        results / "findings.json", "netstick reanalysis compute", ReanalysisError
    )
    overview = _read(results, "runs_overview")
    summary = _read(results, "flaws_summary")
    flaws = _read(results, "flaws")
    per_run = flaws.filter(pl.col("scope") == "run")
    cells = {
        flaw: set(group["cell_id"].to_list())
        for (flaw,), group in per_run.group_by("flaw", maintain_order=True)
    }
    summary = summary.with_columns(
        pl.Series(
            "applies_to",
            [describe_runs(cells.get(f, set()), overview) for f in summary["flaw"]]
            if summary.height
            else [],
            dtype=pl.String,
        )
    )
    thresholds = pl.DataFrame(
        {
            "threshold_ms": [float(x) for x in doc.get("thresholds_ms", [])],
            "meaning": [THRESHOLD_MEANINGS.get(float(x), "") for x in doc.get("thresholds_ms", [])],
        },
        schema={"threshold_ms": pl.Float64, "meaning": pl.String},
    )
    dataset = dict(doc.get("dataset") or {})
    dataset["licence"] = dataset.get("licence") or "unknown (no LICENSE file)"
    shown = {
        "sentences": [sentences.sentence(f) for f in stated(doc["findings"])],
        "dataset_flaws": flaws.filter(pl.col("scope") == "dataset")["flaw"].to_list(),
        "dataset": dataset,
    }
    return {"flaws_summary": summary, "thresholds": thresholds}, shown


def write_figures(results: Path, figures: Path) -> list[Path]:
    """shape()'s tables as CSV and report.json in figures."""
    tables, shown = shape(results)
    written = [
        replace_atomically(figures / f"{name}.csv", lambda p, t=t: t.write_csv(p))
        for name, t in tables.items()
    ]
    written.append(write_json(figures / "report.json", shown, sort_keys=False, strict=True))
    return written


def render(results: Path, out: Path, pdf: Path | None = None, figures: Path | None = None) -> str:
    """Shape and render the report of the tables in results into out (and pdf); the figure
    tables go to figures, or to a temporary directory. Returns the engine used."""
    with tempfile.TemporaryDirectory(prefix="netstick-reanalysis-") as tmp:
        fig_dir = figures if figures is not None else Path(tmp)
        write_figures(results, fig_dir)
        params = {"results": str(results.resolve()), "figures": str(fig_dir.resolve())}
        return render_qmd(params, out, source=QMD, pdf=pdf)
