"""A synthetic history store with known content, for `netstick bench site` and the site's tests.

    write_history(history_dir, nights=365, cells=30) -> Planted

Writes data/history/<campaign>/ as the nightly would (layout: stats/history/store.py and the
verdicts and bisections documents beside it): one night CSV a day, up to 30 cells (ten
library/transport pairs of the reference and Unity prototypes at 100, 20 and 200 players),
each metric's median and its six run values drawn from a seeded generator; every library
publishes a new version every few weeks (each night's cells carry the version they measured);
from the second night on a verdicts file per night (every cell against the baseline, and each
new version against its predecessor: no difference; one version that does not build). Planted:
on the newest night kcp-go's new version makes the reference's kcp cell at 100 players
`slowdown` times slower in RTT p50, confirmed, with a bisection naming its first bad commit;
another cell is suspected but not confirmed. The first `legacy_nights` nights lack the
prototype/transport/library/library_version columns, as nights from before they existed do.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import polars as pl

from workflow.files import write_json

METRIC: Final = "rtt_net_p50_us"
METRICS: Final = {  # metric -> typical median at 100 players
    "rtt_net_p50_us": 2000.0, "rtt_net_p95_us": 3200.0, "rtt_net_p99_us": 4500.0,
    "server_cpu_cores": 0.35, "server_rss_bytes": 48e6,
}  # fmt: skip
# (prototype, transport, library, version template, its first number, nights between releases)
PAIRS: Final = (
    ("reference", "tcp", "net", "go1.26.{}", 0, 61),
    ("reference", "udp", "net", "go1.26.{}", 0, 61),
    ("reference", "kcp", "github.com/xtaci/kcp-go/v5", "v5.6.{}", 3, 29),
    ("reference", "enet", "github.com/codecat/go-enet", "v0.0.{}", 1, 97),
    ("reference", "quic", "github.com/quic-go/quic-go", "v0.{}.0", 50, 23),
    ("reference", "ws", "github.com/coder/websocket", "v1.8.{}", 10, 41),
    ("reference", "webrtc", "github.com/pion/webrtc/v4", "v4.1.{}", 0, 17),
    ("mirror", "kcp", "com.mirror-networking.mirror", "96.{}.0", 0, 37),
    ("fishnet", "tugboat", "com.firstgeargames.fishnet", "4.6.{}", 2, 31),
    ("ngo", "utp", "com.unity.netcode.gameobjects", "2.4.{}", 0, 53),
)
PLAYERS: Final = (100, 20, 200)  # the planted cell is among the first ten
PLANTED_PAIR: Final = 2  # reference kcp: kcp-go
SUSPECTED_PAIR: Final = 4  # reference quic: suspected, not confirmed
BROKEN_PAIR: Final = 6  # pion/webrtc: a release that does not build
START: Final = dt.datetime(2026, 1, 1, 2, 0, tzinfo=dt.UTC)
RUNS_TOTAL_PER_CELL: Final = 6


@dataclass(frozen=True, slots=True)
class Planted:
    """What the synthetic history holds, for the checks to find."""

    campaign: str
    nights: int
    cells: int
    cell: str  # the regressed cell
    library: str
    transport: str
    metric: str
    night: int  # its night's index (the newest)
    night_id: str
    version: str  # the new version, confirmed slower
    predecessor: str
    first_bad: str  # what the bisection names
    bisection: str  # the bisection file's stem
    slowdown: float
    suspected_cell: str  # suspected, not confirmed, on the same night
    broken_library: str  # a version that does not build
    broken_version: str


def _hash(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()


def cell_plan(cells: int) -> list[tuple[int, int, str]]:
    """(pair index, players, cell id) of the first `cells` cells."""
    if not 1 <= cells <= len(PAIRS) * len(PLAYERS):
        raise ValueError(f"cells: expected 1..{len(PAIRS) * len(PLAYERS)}, got {cells}")
    out = []
    for players in PLAYERS:
        for p, (proto, transport, *_rest) in enumerate(PAIRS):
            cid = f"{proto}-{transport}-p{players}-active-lan-d12"
            out.append((p, players, f"{cid}-{_hash(cid)[:8]}"))
    return out[:cells]


def version_at(pair: int, night: int, last: int) -> str:
    """The version of a pair's library measured on a night; the planted library publishes a
    new one on the newest night."""
    _, _, _, template, first, period = PAIRS[pair]
    k = night // period
    if pair == PLANTED_PAIR and night == last and (last - 1) // period == k:
        k += 1
    return template.format(first + k)


def _stamp(night: int) -> tuple[str, str]:
    t = START + dt.timedelta(days=night)
    return t.isoformat(timespec="seconds"), t.strftime("%Y%m%dT%H%M%SZ")


def _night_rows(
    night: int, last: int, plan: list[tuple[int, int, str]], rng: np.random.Generator,
    slowdown: float, legacy: bool,
) -> list[dict[str, Any]]:  # fmt: skip
    time_utc, _ = _stamp(night)
    night_id = _hash("night", night)[:12]
    rows = []
    for p, players, cid in plan:
        proto, transport, library, *_ = PAIRS[p]
        version = version_at(p, night, last)
        row: dict[str, Any] = {"time": time_utc, "cell_id": cid}
        slow = slowdown if (p == PLANTED_PAIR and players == PLAYERS[0] and night == last) else 1
        for m, typical in METRICS.items():
            scale = typical * (players / 100) ** 0.3 * (1 + 0.02 * p)
            factor = slow if m == METRIC else 1.0
            runs = scale * factor * rng.lognormal(0.0, 0.03, RUNS_TOTAL_PER_CELL)
            row[m] = float(f"{np.median(runs):.6g}")
            row[m + "__runs"] = ";".join(f"{v:.6g}" for v in runs)
        row |= {
            "n_runs": RUNS_TOTAL_PER_CELL, "measured_cell_id": cid, "campaign": "",
            "night_id": night_id, "commit": _hash("commit", night)[:7],
            "library_versions": version, "host": "node1", "cpu_model": "Synthetic CPU",
            "cpu_count": 2, "hardware": "5f1d7e2a9c0b", "profile": "lan",
        }  # fmt: skip
        if not legacy:
            row |= {"prototype": proto, "transport": transport, "library": library,
                    "library_version": version}  # fmt: skip
        rows.append(row)
    return rows


def _cell_verdict(cid: str, base: float, tonight: float, kind: str) -> dict[str, Any]:
    ratio = tonight / base
    confirmed = kind == "confirmed"
    return {
        "cell": cid, "metric": METRIC, "baseline": base, "tonight": tonight,
        "ratio": ratio, "interval": [ratio * 0.97, ratio * 1.03], "p": 0.001 if kind else 0.6,
        "q": 0.004 if kind else 0.8, "verdict": "regression" if kind else "no change",
        "effect_threshold": 0.05, "suspected": bool(kind), "confirmed": confirmed,
    }  # fmt: skip


def _version_verdict(
    pair: int, cid: str, version: str, predecessor: str, night: int, **kw: Any
) -> dict[str, Any]:
    _, transport, library, *_ = PAIRS[pair]
    published = (START + dt.timedelta(days=night, hours=-9)).isoformat(timespec="seconds")
    return {
        "library": library, "transport": transport, "version": version,
        "predecessor": predecessor, "published": published, "cell": cid, "metric": METRIC,
        "ratio": 1.004, "interval": [0.981, 1.027], "verdict": "no difference", "bound": 0.027,
        "confirmed": None, "build_error": None,
    } | kw  # fmt: skip


def _verdicts(
    night: int, last: int, plan: list[tuple[int, int, str]], rows: list[dict[str, Any]],
    previous: list[dict[str, Any]], planted: Planted,
) -> dict[str, Any]:  # fmt: skip
    """The night's verdicts document: every cell against the night before (as its baseline),
    and each pair's new version against its predecessor."""
    cells = []
    for (p, players, cid), row, before in zip(plan, rows, previous, strict=True):
        kind = ""
        if night == last and players == PLAYERS[0]:
            kind = {PLANTED_PAIR: "confirmed", SUSPECTED_PAIR: "suspected"}.get(p, "")
        tonight = row[METRIC] * (1.08 if kind == "suspected" else 1.0)
        cells.append(_cell_verdict(cid, before[METRIC], tonight, kind))
    versions = []
    for p, players, cid in plan:
        if players != PLAYERS[0]:
            continue
        new, old = version_at(p, night, last), version_at(p, night - 1, last)
        if p == PLANTED_PAIR and night == last:
            versions.append(_version_verdict(
                p, cid, new, old, night, ratio=planted.slowdown,
                interval=[planted.slowdown * 0.97, planted.slowdown * 1.03], verdict="slower",
                bound=planted.slowdown * 1.03 - 1, confirmed=True,
            ))  # fmt: skip
        elif new != old:
            versions.append(_version_verdict(p, cid, new, old, night))
        if p == BROKEN_PAIR and night == last // 2:
            versions.append(_version_verdict(
                p, None, planted.broken_version, new, night, ratio=None, interval=[None, None],
                verdict="does not build", bound=None,
                build_error="./transport.go:41:9: undefined: webrtc.SettingEngine.SetICEMulticast",
            ))  # fmt: skip
    _, stamp = _stamp(night)
    return {
        "schema": 1, "campaign": planted.campaign, "metric": METRIC, "unit": "us",
        "min_effect": 0.05, "level": 0.95, "k": 5,
        "night": f"{stamp}-{rows[0]['night_id']}.csv", "night_id": rows[0]["night_id"],
        "hardware": rows[0]["hardware"], "baseline_nights": [f"night {night - 1}"],
        "cells": cells, "versions": versions,
    }  # fmt: skip


def _bisection(planted: Planted) -> dict[str, Any]:
    """kcp-go between the last good and the first bad release: three commits, the second bad."""
    # Go's pseudo-versions of commits before the release: vX.Y.Z-0.<UTC time>-<12 hex>, made
    # in the weeks before the night that measured the release.
    made = [START + dt.timedelta(days=planted.night - d, hours=10) for d in (20, 13, 6)]
    commits = [f"{planted.version}-0.{t:%Y%m%d%H%M%S}-{_hash(t)[:12]}" for t in made]
    first_bad = commits[1]
    steps = [
        (commits[1], planted.predecessor, planted.slowdown, "bad"),
        (commits[0], planted.predecessor, 1.003, "good"),
    ]
    return {
        "schema": 1, "campaign": planted.campaign, "night_id": planted.night_id,
        "library": planted.library, "cell": planted.cell, "metric": planted.metric,
        "good": planted.predecessor, "bad": planted.version,
        "candidates": [planted.predecessor, *commits, planted.version],
        "steps": [
            {"candidate": c, "against": a, "ratio": r, "interval": [r * 0.97, r * 1.03],
             "runs_per_side": 6, "decision": d}
            for c, a, r, d in steps
        ],
        "status": "found", "first_bad": first_bad, "last_good": commits[0], "bound": None,
    }  # fmt: skip


def write_history(
    history_dir: Path, *, campaign: str = "nightly", nights: int = 365, cells: int = 30,
    legacy_nights: int = 0, slowdown: float = 1.25, seed: int = 20261126,
) -> Planted:  # fmt: skip
    """Write the synthetic history of campaign under history_dir (which must not hold that
    campaign yet: the store is append-only) and say what was planted in it."""
    folder = history_dir / campaign
    if folder.exists():
        raise FileExistsError(f"{folder}: exists; the synthetic history needs a fresh directory")
    if nights < 2:
        raise ValueError(f"nights: expected at least 2, got {nights}")
    plan = cell_plan(cells)
    if not any(p == PLANTED_PAIR and pl_ == PLAYERS[0] for p, pl_, _ in plan):
        raise ValueError(f"cells: {cells} leave out the planted cell; take at least 3")
    last = nights - 1
    planted_cell = next(c for p, pl_, c in plan if p == PLANTED_PAIR and pl_ == PLAYERS[0])
    suspected = next((c for p, pl_, c in plan if p == SUSPECTED_PAIR and pl_ == PLAYERS[0]), "")
    _, stamp = _stamp(last)
    night_id = _hash("night", last)[:12]
    planted = Planted(
        campaign=campaign, nights=nights, cells=len(plan), cell=planted_cell,
        library=PAIRS[PLANTED_PAIR][2], transport=PAIRS[PLANTED_PAIR][1], metric=METRIC,
        night=last, night_id=night_id, version=version_at(PLANTED_PAIR, last, last),
        predecessor=version_at(PLANTED_PAIR, last - 1, last), first_bad="",
        bisection=f"{stamp}-{night_id}-1", slowdown=slowdown, suspected_cell=suspected,
        broken_library=PAIRS[BROKEN_PAIR][2], broken_version="v4.9.0-rc.1",
    )  # fmt: skip
    bisection = _bisection(planted)
    planted = dataclasses.replace(planted, first_bad=bisection["first_bad"])
    rng = np.random.default_rng(seed)
    previous: list[dict[str, Any]] = []
    for night in range(nights):
        rows = _night_rows(night, last, plan, rng, slowdown, legacy=night < legacy_nights)
        for r in rows:
            r["campaign"] = campaign
        _, night_stamp = _stamp(night)
        name = f"{night_stamp}-{rows[0]['night_id']}"
        folder.mkdir(parents=True, exist_ok=True)
        pl.DataFrame(rows, infer_schema_length=None).write_csv(folder / f"{name}.csv")
        if previous:
            doc = _verdicts(night, last, plan, rows, previous, planted)
            write_json(folder / "verdicts" / f"{name}.json", doc, sort_keys=False, strict=True)
        previous = rows
    write_json(folder / "bisections" / f"{planted.bisection}.json", bisection, sort_keys=False)
    return planted
