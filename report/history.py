"""The nightly regression report: draws what stats.history computed.

    netstick history render TABLES --out report/_output/history/index.html

TABLES holds stats.history's trends.csv, verdicts.csv and history.json (`netstick history
compute`, trends over results directories), or regressions.json with night-trends.csv (tonight
against its rolling baseline from the history store: `netstick history decide|confirm`,
`snakemake confirm`), or both. Here the findings and verdicts become sentences
(report.sentences) and the metric's unit the shown one, written as report.json (--figures, by
default a temporary directory) beside which report/history.qmd reads the tables. Nothing is
computed here.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Final

from report import sentences
from report.render import render as render_qmd
from workflow.files import REPO, write_json

SOURCE: Final = Path(__file__).with_name("history.qmd")
DEFAULT_OUT: Final = REPO / "report" / "_output" / "history" / "index.html"
DECISION_SCHEMA: Final = 1  # regressions.json's schema (stats.history.decide.REGRESSIONS_SCHEMA)


class HistoryReportError(ValueError):
    """The tables directory cannot be drawn; the message names the file."""


def load(tables: Path) -> dict[str, Any]:
    doc = sentences.load_findings(
        tables / "history.json", "netstick history compute", HistoryReportError
    )
    for name in ("trends.csv", "verdicts.csv"):
        if not (tables / name).is_file():
            raise HistoryReportError(f"{tables / name}: missing; run `netstick history compute`")
    return doc


def load_decision(tables: Path) -> dict[str, Any]:
    path = tables / "regressions.json"
    try:
        doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise HistoryReportError(
            f"{path}: not readable ({exc}); run `netstick history confirm` first"
        ) from None
    if doc.get("schema") != DECISION_SCHEMA or not isinstance(doc.get("cells"), list):
        raise HistoryReportError(f"{path}: expected schema {DECISION_SCHEMA} with a cells list")
    if not (tables / "night-trends.csv").is_file():
        raise HistoryReportError(f"{tables / 'night-trends.csv'}: missing beside {path.name}")
    return doc


def _interval(iv: list[float | None] | None) -> str:
    if not iv or iv[0] is None or iv[1] is None:
        return "no interval"
    return f"[{iv[0]:.3g}, {iv[1]:.3g}]"


def _could_see(verdict: dict[str, Any]) -> str:
    """What the night could see in this comparison: its detectable change (stats.power)."""
    ratio = verdict.get("detectable_ratio")
    if ratio is None:
        return "; this night could not tell its detectable change"
    return f"; this night could see a change of {100 * (ratio - 1):.3g} % or more"


def version_sentence(v: dict[str, Any]) -> str:
    """One version against its predecessor on one metric, in words, with what it could see."""
    said = f"{v.get('library')} {v.get('version')} against {v.get('predecessor')}"
    if v.get("verdict") == "does not build":
        return f"{said}: does not build ({v.get('build_error')})"
    said += f", {v.get('metric')}: {v.get('verdict')}"
    if v.get("ratio") is not None:
        said += f" (ratio {v['ratio']:.3g}, {_interval(v.get('interval'))})"
    if v.get("min_effect") is not None:
        said += f", minimum effect {100 * v['min_effect']:.3g} %"
    said += _could_see(v)
    if v.get("confirmed") is not None and v.get("verdict") == "slower":
        said += "; confirmed by the re-run" if v["confirmed"] else "; not confirmed by the re-run"
    return said


def verdict_sentence(cell: dict[str, Any], unit: str) -> str:
    """One cell of a decision in words: its verdict, ratio with interval, q, confirmation."""
    base, shown = sentences.convert(cell.get("baseline"), unit)
    tonight, _ = sentences.convert(cell.get("tonight"), unit)
    ratio = cell.get("ratio")
    said = f"{cell['cell']}: {cell.get('verdict', 'no verdict')}"
    if ratio is not None and base is not None and tonight is not None:
        said += (
            f", {tonight:.4g} {shown} tonight against {base:.4g} {shown} (ratio {ratio:.3g}, "
            f"{_interval(cell.get('interval'))}, BH q {cell.get('q') or float('nan'):.2g})"
        )
    said += _could_see(cell)
    if cell.get("suspected"):
        said += (
            "; confirmed by the re-run"
            if cell.get("confirmed")
            else "; not confirmed by the re-run (not reported as a regression)"
            if cell.get("confirmed") is False
            else "; awaiting the confirming re-run"
        )
    return said


def shape(tables: Path) -> dict[str, Any]:
    """report.json: the findings' sentences and the metric's shown unit with the factor that
    takes stored values to it; with a decision, its sentences, confirmed regressions first."""
    has_trends = (tables / "history.json").is_file()
    has_decision = (tables / "regressions.json").is_file()
    if not has_trends and not has_decision:
        raise HistoryReportError(
            f"{tables}: neither history.json (`netstick history compute`) nor regressions.json "
            "(`netstick history confirm`)"
        )
    doc = load(tables) if has_trends else {"findings": [], "unit": None}
    decision = load_decision(tables) if has_decision else None
    unit = str(doc.get("unit") or (decision or {}).get("unit") or "count")
    factor, shown = sentences.convert(1.0, unit)
    out: dict[str, Any] = {
        "sentences": [sentences.sentence(f) for f in doc["findings"]],
        "unit_shown": shown,
        "unit_factor": factor,
        "has_trends": has_trends,
        "has_decision": has_decision,
    }
    if decision is not None:
        cells = sorted(
            decision["cells"], key=lambda c: (not c.get("confirmed"), not c["suspected"], c["cell"])
        )
        out["decision"] = {
            "metric": decision["metric"],
            "night": decision["night"],
            "baseline_nights": len(decision["baseline_nights"]),
            "k": decision["k"],
            "min_effect": decision["min_effect"],
            "confirmed": [c["cell"] for c in cells if c.get("confirmed")],
            "sentences": [verdict_sentence(c, unit) for c in cells],
            "versions": [version_sentence(v) for v in decision.get("versions") or []],
            "note": decision.get("note"),
            # Runs measured beside a busy neighbour, left out by the stats stage (if any).
            "left_out": [
                str(n)
                for n in ((decision.get("left_out") or {}).get(k) for k in ("note", "rerun_note"))
                if n
            ],
        }
    return out


def render(tables: Path, out: Path, figures: Path | None = None) -> str:
    """Render the history report of the tables into out; report.json goes to figures, or to a
    temporary directory. Returns the engine used."""
    with tempfile.TemporaryDirectory(prefix="netstick-history-") as tmp:
        fig_dir = figures if figures is not None else Path(tmp)
        write_json(fig_dir / "report.json", shape(tables), sort_keys=False, strict=True)
        params = {"results": str(tables.resolve()), "figures": str(fig_dir.resolve())}
        return render_qmd(params, out, source=SOURCE)
