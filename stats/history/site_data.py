"""The trend site's data: one campaign's whole history store as one compact document.

    netstick history site CAMPAIGN --out DIR     report/site draws it (offline, GitHub Pages)

From data/history/<campaign>/ (the night CSVs, verdicts/*.json, bisections/*.json; any of the
JSON folders may be absent, and older nights lack the prototype, transport, library and
library_version columns) it computes:

- series: per library, transport and cell shape (the cell id without its version and content
  hash, so a cell keeps its series when its pinned version moves), per metric each night's
  median with its order-statistic interval over the stored runs (decide.night_median); the
  line follows the series' most often measured cell, other cells of the same night (a new
  version beside the pinned one) are extra points; the version each night and where it
  changed; the confirmed regressions, each linked to its bisection;
- newest: the newest verdicts file's verdicts, confirmed regressions first, then suspected,
  then the rest;
- matrix: every version ever measured or decided per library, its first and last night and its
  verdicts against its predecessor;
- bisections: each bisection's outcome and steps, the regressions' link targets.

Numbers are rounded to SIG_DIGITS significant digits and the series are columnar (one list per
field, nights as indices into `nights`), so 365 nights x 30 cells x 5 metrics stays about a
megabyte.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import polars as pl

from stats.changepoints import version_key
from stats.findings import LEVEL
from stats.history import HistoryError, metric_unit
from stats.history.decide import night_median
from stats.history.store import HISTORY_METRICS, RUNS_SUFFIX, read_history

SITE_SCHEMA: Final = 1
SIG_DIGITS: Final = 4
CONFIRMED, SUSPECTED, OTHER = 0, 1, 2  # the newest night's verdicts, in this order
RANK_NAMES: Final = {CONFIRMED: "confirmed regression", SUSPECTED: "suspected", OTHER: "other"}
SLOWER: Final = "slower"  # a version's verdict against its predecessor (the verdicts' "versions")
REGRESSION: Final = "regression"  # a cell's verdict (stats.regress.REGRESSION)
# A version's verdicts summed up, worst first: what the matrix shows for it.
SUMMARY_ORDER: Final = (
    "confirmed slower", SLOWER, "does not build", "inconclusive", "faster", "no difference",
    "not measured",
)  # fmt: skip
_HASH = re.compile(r"-[0-9a-f]{8}$")
_TRANSPORT = re.compile(r"-([^-]+)-p\d+-")


def sig(x: Any) -> float | None:
    """x rounded to SIG_DIGITS significant digits; None for a missing or non-finite value."""
    if x is None:
        return None
    v = float(x)
    if not math.isfinite(v):
        return None
    return float(f"{v:.{SIG_DIGITS}g}")


def _text(x: Any) -> str | None:
    return None if x is None or str(x) == "" else str(x)


# -- which series a row belongs to ----------------------------------------------------------------


def cell_shape(cell_id: str, version: str | None) -> str:
    """The cell id without its content hash and its version segment: the same measurement of
    another version (or of the pinned one after the pin moved) has the same shape."""
    shape = _HASH.sub("", cell_id)
    if version and f"-{version}-" in shape:
        shape = shape.replace(f"-{version}-", "-", 1)
    return shape


@dataclass(frozen=True, slots=True)
class CellInfo:
    """What a history row measured: prototype, transport, library, version, shape."""

    prototype: str
    transport: str
    library: str
    version: str | None
    shape: str


def _row_version(row: Mapping[str, Any]) -> str | None:
    # Older nights have only library_versions (every version the cell's runs recorded).
    return _text(row.get("library_version")) or _text(row.get("library_versions"))


def cell_infos(history: pl.DataFrame) -> list[CellInfo]:
    """One CellInfo per history row. Rows without the prototype/transport/library columns take
    them from a row of the same shape that has them (a newer night of the same cell), else from
    the cell id (prototype: its first part; transport: the part before -p<players>-; library:
    prototype/transport)."""
    rows = history.select(
        [c for c in ("cell_id", "prototype", "transport", "library", "library_version",
                     "library_versions") if c in history.columns]
    ).to_dicts()  # fmt: skip
    known: dict[str, dict[str, str]] = {}
    for r in rows:
        if _text(r.get("library")):
            shape = cell_shape(str(r["cell_id"]), _row_version(r))
            known[shape] = {k: str(r.get(k) or "") for k in ("prototype", "transport", "library")}
    out = []
    for r in rows:
        cell, version = str(r["cell_id"]), _row_version(r)
        shape = cell_shape(cell, version)
        have = known.get(shape, {})
        prototype = _text(r.get("prototype")) or have.get("prototype") or cell.split("-")[0]
        found = _TRANSPORT.search(cell)
        transport = (
            _text(r.get("transport"))
            or have.get("transport")
            or (found.group(1) if found else "unknown")
        )
        library = _text(r.get("library")) or have.get("library") or f"{prototype}/{transport}"
        out.append(CellInfo(prototype, transport, library, version, shape))
    return out


# -- the verdicts and bisections files ------------------------------------------------------------


def read_documents(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """(file stem, document) of every *.json in folder, by name (their stamps sort by time);
    none when the folder is absent. A file that is not a JSON object is an error naming it."""
    docs = []
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise HistoryError(f"{p}: not readable JSON ({exc})") from None
        if not isinstance(doc, dict):
            raise HistoryError(f"{p}: expected a JSON object, got {type(doc).__name__}")
        docs.append((p.stem, doc))
    return docs


def _interval(x: Any) -> list[float | None]:
    lo, hi = [*x, None, None][:2] if isinstance(x, list | tuple) else (None, None)
    return [sig(lo), sig(hi)]


def bisection_summary(stem: str, doc: Mapping[str, Any]) -> dict[str, Any]:
    """One bisection as the site shows it: what was bisected, its outcome and its steps."""
    steps = [
        {
            "candidate": _text(s.get("candidate")),
            "against": _text(s.get("against")),
            "ratio": sig(s.get("ratio")),
            "interval": _interval(s.get("interval")),
            "runs_per_side": s.get("runs_per_side"),
            "decision": _text(s.get("decision")),
        }
        for s in doc.get("steps") or []
        if isinstance(s, dict)
    ]
    keys = ("night_id", "library", "cell", "metric", "good", "bad", "status", "first_bad",
            "last_good", "bound")  # fmt: skip
    return {"id": stem, **{k: _text(doc.get(k)) for k in keys},
            "candidates": len(doc.get("candidates") or []), "steps": steps}  # fmt: skip


def find_bisection(
    bisections: Iterable[Mapping[str, Any]], night_id: str | None, metric: str | None,
    cell: str | None, library: str | None,
) -> str | None:  # fmt: skip
    """The id of the bisection of a regression: same night and metric, same cell or library."""
    for b in bisections:
        if b["night_id"] != night_id or (b["metric"] and metric and b["metric"] != metric):
            continue
        if (cell and b["cell"] == cell) or (library and b["library"] == library):
            return str(b["id"])
    return None


def verdict_items(
    doc: Mapping[str, Any], infos: Mapping[str, CellInfo], bisections: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Every verdict of one verdicts document (its cells, then its versions) with its rank
    (CONFIRMED, SUSPECTED, OTHER) and its bisection; unsorted."""
    night_id, items = _text(doc.get("night_id")), []
    for c in doc.get("cells") or []:
        cell = str(c.get("cell"))
        info, metric = infos.get(cell), _text(c.get("metric")) or _text(doc.get("metric"))
        rank = (
            CONFIRMED if c.get("confirmed") is True else SUSPECTED if c.get("suspected") else OTHER
        )
        items.append(
            {"kind": "cell", "cell": cell, "metric": metric,
             "library": info.library if info else None,
             "transport": info.transport if info else None,
             "version": info.version if info else None, "predecessor": None,
             "baseline": sig(c.get("baseline")), "tonight": sig(c.get("tonight")),
             "ratio": sig(c.get("ratio")), "interval": _interval(c.get("interval")),
             "verdict": _text(c.get("verdict")), "q": sig(c.get("q")), "bound": None,
             "confirmed": c.get("confirmed") if isinstance(c.get("confirmed"), bool) else None,
             "build_error": None, "published": None, "rank": rank}
        )  # fmt: skip
    for v in doc.get("versions") or []:
        verdict = _text(v.get("verdict"))
        rank = (
            CONFIRMED if verdict == SLOWER and v.get("confirmed") is True
            else SUSPECTED if verdict == SLOWER and v.get("confirmed") is None
            else OTHER
        )  # fmt: skip
        items.append(
            {"kind": "version", "cell": _text(v.get("cell")), "metric": _text(v.get("metric")),
             "library": _text(v.get("library")), "transport": _text(v.get("transport")),
             "version": _text(v.get("version")), "predecessor": _text(v.get("predecessor")),
             "baseline": None, "tonight": None, "ratio": sig(v.get("ratio")),
             "interval": _interval(v.get("interval")), "verdict": verdict, "q": None,
             "bound": sig(v.get("bound")), "build_error": _text(v.get("build_error")),
             "confirmed": v.get("confirmed") if isinstance(v.get("confirmed"), bool) else None,
             "published": _text(v.get("published")), "rank": rank}
        )  # fmt: skip
    for it in items:
        it["status"] = RANK_NAMES[it["rank"]]
        it["bisection"] = (
            find_bisection(bisections, night_id, it["metric"], it["cell"], it["library"])
            if it["rank"] == CONFIRMED
            else None
        )
    return items


def newest_first(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Confirmed regressions, then suspected, then the rest; within each the largest ratio
    first (a verdict without a ratio last), then by library, transport and metric."""
    return sorted(
        items,
        key=lambda it: (
            it["rank"],
            -(it["ratio"] if it["ratio"] is not None else -math.inf),
            str(it["library"]), str(it["transport"]), str(it["metric"]), it["kind"],
        ),
    )  # fmt: skip


# -- the series -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Series:
    key: str
    prototype: str
    transport: str
    library: str
    shape: str
    rows: list[tuple[int, int]] = field(default_factory=list)  # (night index, history row)


def _metric_columns(
    history: pl.DataFrame, metrics: list[str]
) -> dict[str, tuple[list[Any], list[Any]]]:
    """metric -> (stored medians, stored runs text), one entry per history row."""
    out = {}
    for m in metrics:
        runs = m + RUNS_SUFFIX
        out[m] = (
            history[m].cast(pl.Float64, strict=False).to_list(),
            history[runs].to_list() if runs in history.columns else [None] * history.height,
        )
    return out


def _point(columns: tuple[list[Any], list[Any]], row: int) -> tuple[Any, Any, Any]:
    """(median, low, high) of one row: the stored median (the estimate when there is none)
    with the order-statistic interval over the stored runs."""
    medians, runs = columns
    iv = night_median(runs[row])
    median = medians[row] if medians[row] is not None else iv.estimate
    return sig(median), sig(iv.low), sig(iv.high)


def build_series(
    history: pl.DataFrame, infos: list[CellInfo], night_of: list[int], metrics: list[str],
) -> tuple[list[dict[str, Any]], dict[tuple[str, int], tuple[str, int]]]:  # fmt: skip
    """The series (see the module's docstring) and, per (cell, night index), its series key
    and row number, which the regression marks are placed with."""
    cells = history["cell_id"].cast(pl.String).to_list()
    groups: dict[tuple[str, str, str], _Series] = {}
    for row, info in enumerate(infos):
        gk = (info.library, info.transport, info.shape)
        if gk not in groups:
            groups[gk] = _Series(
                key=f"s{len(groups)}", prototype=info.prototype, library=info.library,
                transport=info.transport, shape=info.shape,
            )  # fmt: skip
        groups[gk].rows.append((night_of[row], row))
    columns = _metric_columns(history, metrics)
    where: dict[tuple[str, int], tuple[str, int]] = {}
    out = []
    for s in sorted(groups.values(), key=lambda g: (g.library, g.transport, g.shape)):
        # The line follows the most often measured cell of the night (the pinned one, or the
        # one whose content hash changed): a cell measured once (a new version) is a point.
        freq = Counter(cells[r] for _, r in s.rows)
        by_night: dict[int, list[int]] = defaultdict(list)
        for n, r in s.rows:
            by_night[n].append(r)
        line = {"i": [], "cell": [], "version": [], **{m: [[], [], []] for m in metrics}}
        others = {"i": [], "cell": [], "version": [], **{m: [[], [], []] for m in metrics}}
        for n in sorted(by_night):
            ranked = sorted(by_night[n], key=lambda r: (-freq[cells[r]], cells[r]))
            for part, r in [(line, ranked[0]), *((others, r) for r in ranked[1:])]:
                part["i"].append(n)
                part["cell"].append(cells[r])
                part["version"].append(infos[r].version)
                for m in metrics:
                    for lst, v in zip(part[m], _point(columns[m], r), strict=True):
                        lst.append(v)
                where[(cells[r], n)] = (s.key, r)
        out.append(_series_doc(s, line, others, metrics))
    return out, where


def _changes(i: list[int], values: list[Any]) -> list[list[Any]]:
    """[[night index, value]] where values (one per night of i) change, the first included."""
    out: list[list[Any]] = []
    for n, v in zip(i, values, strict=True):
        if not out or out[-1][1] != v:
            out.append([n, v])
    return out


def _series_doc(
    s: _Series, line: dict[str, Any], others: dict[str, Any], metrics: list[str]
) -> dict[str, Any]:
    return {
        "key": s.key,
        "prototype": s.prototype,
        "library": s.library,
        "transport": s.transport,
        "shape": s.shape,
        "cells": sorted(set(line["cell"]) | set(others["cell"])),
        "i": line["i"],
        "versions": _changes(line["i"], line["version"]),  # where the version changed
        "line_cells": _changes(line["i"], line["cell"]),
        "metrics": {m: line[m] for m in metrics},
        "others": {
            "i": others["i"],
            "cell": others["cell"],
            "version": others["version"],
            "metrics": {m: others[m] for m in metrics},
        },
        "regressions": [],
    }


def place_regressions(
    series: list[dict[str, Any]],
    where: Mapping[tuple[str, int], tuple[str, int]],
    history: pl.DataFrame,
    marks: Iterable[tuple[int, dict[str, Any]]],
) -> None:
    """Each confirmed regression (night index, verdict item) onto its series, at its cell's
    median that night (y); a version verdict without a measured cell goes onto the series of
    its library and transport measured that night."""
    by_key = {s["key"]: s for s in series}
    seen: set[tuple[str, int, str | None, str | None]] = set()
    for n, it in marks:
        found = where.get((str(it["cell"]), n))
        if found is None:
            found = next(
                ((s["key"], -1) for s in series
                 if s["library"] == it["library"] and s["transport"] == it["transport"]
                 and n in s["i"]),
                None,
            )  # fmt: skip
        if found is None or (found[0], n, it["metric"], it["version"]) in seen:
            continue
        seen.add((found[0], n, it["metric"], it["version"]))
        key, row = found
        metric = it["metric"]
        y = (
            sig(history[metric][row])
            if row >= 0 and metric in history.columns and history[metric].dtype.is_numeric()
            else None
        )
        by_key[key]["regressions"].append(
            {"i": n, "metric": metric, "cell": it["cell"], "version": it["version"],
             "predecessor": it["predecessor"], "ratio": it["ratio"], "interval": it["interval"],
             "bisection": it["bisection"], "y": y}
        )  # fmt: skip


def version_matrix(
    infos: list[CellInfo], night_of: list[int], verdicts: list[tuple[int | None, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Per library, every version measured (first and last night, how many nights, which
    transports) or decided (a version that does not build is never measured), with the newest
    verdicts against its predecessor per transport and metric and their summary (the worst)."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}

    def row(library: str, version: str) -> dict[str, Any]:
        return rows.setdefault(
            (library, version),
            {"version": version, "first": None, "last": None, "nights": set(),
             "transports": set(), "published": None, "predecessor": None, "verdicts": {}},
        )  # fmt: skip

    for info, n in zip(infos, night_of, strict=True):
        if info.version is None:
            continue
        r = row(info.library, info.version)
        r["first"] = n if r["first"] is None else min(r["first"], n)
        r["last"] = n if r["last"] is None else max(r["last"], n)
        r["nights"].add(n)
        r["transports"].add(info.transport)
    for n, doc in verdicts:  # oldest first: a newer verdict replaces an older one
        for v in doc.get("versions") or []:
            library, version = _text(v.get("library")), _text(v.get("version"))
            if library is None or version is None:
                continue
            r = row(library, version)
            r["published"] = _text(v.get("published")) or r["published"]
            r["predecessor"] = _text(v.get("predecessor")) or r["predecessor"]
            r["decided"] = n
            verdict = _text(v.get("verdict"))
            r["verdicts"][(_text(v.get("transport")), _text(v.get("metric")))] = {
                "transport": _text(v.get("transport")), "metric": _text(v.get("metric")),
                "verdict": verdict, "ratio": sig(v.get("ratio")),
                "interval": _interval(v.get("interval")), "bound": sig(v.get("bound")),
                "confirmed": v.get("confirmed") if isinstance(v.get("confirmed"), bool) else None,
                "build_error": _text(v.get("build_error")), "note": _text(v.get("note")),
                "night": n,
            }  # fmt: skip
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (library, _), r in rows.items():
        found = list(r["verdicts"].values())
        labels = {
            "confirmed slower" if f["verdict"] == SLOWER and f["confirmed"] else f["verdict"]
            for f in found
        }
        r |= {
            "nights": len(r["nights"]),
            "transports": sorted(r["transports"]),
            "verdicts": sorted(found, key=lambda f: (str(f["transport"]), str(f["metric"]))),
            "summary": next(
                (s for s in SUMMARY_ORDER if s in labels), min(labels - {None}, default=None)
            ),
        }
        out[library].append(r)
    for versions in out.values():
        versions.sort(
            key=lambda r: (
                min(x for x in (r["first"], r.pop("decided", None), math.inf) if x is not None),
                version_key(str(r["version"])),
            )
        )
    return [{"library": lib, "versions": out[lib]} for lib in sorted(out)]


def site_document(history_dir: Path, campaign: str) -> dict[str, Any]:
    """The trend site's document of one campaign of the history store (the module's
    docstring says what is in it)."""
    folder = history_dir / campaign
    history = read_history(history_dir, campaign)
    files = history["file"].unique(maintain_order=True).to_list()
    index = {f: i for i, f in enumerate(files)}
    first = history.unique("file", keep="first", maintain_order=True)
    nights = {
        "file": files,
        "id": [_text(x) for x in first["night_id"].to_list()],
        "time": [_text(x) for x in first["time"].to_list()],
        "hardware": [_text(x) for x in first["hardware"].to_list()]
        if "hardware" in first.columns
        else [None] * len(files),
    }
    by_id = {nid: i for i, nid in enumerate(nights["id"]) if nid}
    night_of = [index[f] for f in history["file"].to_list()]
    # A metric no night measured (server_instr_per_msg without callgrind cells) gets no chart.
    metrics = [
        m
        for m in HISTORY_METRICS
        if m in history.columns and history[m].cast(pl.Float64, strict=False).drop_nulls().len()
    ]
    infos = cell_infos(history)
    series, where = build_series(history, infos, night_of, metrics)
    bisections = [bisection_summary(stem, d) for stem, d in read_documents(folder / "bisections")]
    docs = read_documents(folder / "verdicts")
    # A cell verdict's library and version: the cell's that night (its latest elsewhere).
    info_of: dict[str, CellInfo] = {}
    info_at: dict[int, dict[str, CellInfo]] = defaultdict(dict)
    for c, info, n in zip(
        history["cell_id"].cast(pl.String).to_list(), infos, night_of, strict=True
    ):
        info_of[c] = info_at[n][c] = info
    dated: list[tuple[int | None, dict[str, Any]]] = []
    marks: list[tuple[int, dict[str, Any]]] = []
    newest: dict[str, Any] | None = None
    for stem, doc in docs:
        n = by_id.get(str(doc.get("night_id")), index.get(str(doc.get("night"))))
        dated.append((n, doc))
        items = verdict_items(
            doc, info_of | info_at.get(n if n is not None else -1, {}), bisections
        )
        marks += [(n, it) for it in items if n is not None and it["rank"] == CONFIRMED]
        newest = {
            "file": stem, "night": _text(doc.get("night")), "night_id": _text(doc.get("night_id")),
            "i": n, "time": nights["time"][n] if n is not None else None,
            "note": _text(doc.get("note")),
            "baseline_nights": len(doc.get("baseline_nights") or []),
            "verdicts": newest_first(items),
        }  # fmt: skip
    place_regressions(series, where, history, marks)
    return {
        "schema": SITE_SCHEMA,
        "campaign": campaign,
        "level": LEVEL,
        "metrics": {m: metric_unit(m) for m in metrics},
        "nights": nights,
        "newest_night": len(files) - 1,
        "newest": newest,
        "series": series,
        "matrix": version_matrix(infos, night_of, dated),
        "bisections": bisections,
    }
