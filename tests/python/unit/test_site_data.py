"""The trend site's document (stats/history/site_data.py) over a small synthetic history with a
planted regression (workflow/bench/synthetic_history.py), and the page report/site shapes of
it: the newest night's verdicts in order, the versions marked where they changed, the version
matrix's verdicts, each night's interval, and what an older or partial store still gives."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from report.site.build import SiteError, page, write_site
from stats.history import HistoryError
from stats.history.site_data import (
    CONFIRMED,
    OTHER,
    SUSPECTED,
    cell_shape,
    sig,
    site_document,
)
from stats.intervals import quantile_ci
from workflow.bench.synthetic_history import (
    PAIRS,
    PLANTED_PAIR,
    Planted,
    version_at,
    write_history,
)

NIGHTS = 40
LEGACY = 6  # the first nights lack the prototype/transport/library/library_version columns


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Planted]:
    root = tmp_path_factory.mktemp("history")
    return root, write_history(root, nights=NIGHTS, cells=12, legacy_nights=LEGACY)


@pytest.fixture(scope="module")
def doc(store: tuple[Path, Planted]) -> dict:
    root, planted = store
    return site_document(root, planted.campaign)


def _series(doc: dict, cell: str) -> dict:
    return next(s for s in doc["series"] if cell in s["cells"])


def test_newest_verdicts_confirmed_then_suspected_then_the_rest(
    doc: dict, store: tuple[Path, Planted]
) -> None:
    _, planted = store
    newest = doc["newest"]
    assert newest["i"] == planted.night == doc["newest_night"] == NIGHTS - 1
    ranks = [v["rank"] for v in newest["verdicts"]]
    assert ranks == sorted(ranks)
    confirmed = [v for v in newest["verdicts"] if v["rank"] == CONFIRMED]
    # the planted version against its predecessor, and its cell against the baseline nights
    assert {(v["kind"], v["cell"]) for v in confirmed} == {
        ("version", planted.cell),
        ("cell", planted.cell),
    }
    first = next(v for v in confirmed if v["kind"] == "version")
    assert (first["library"], first["transport"], first["metric"]) == (
        planted.library,
        planted.transport,
        planted.metric,
    )
    assert first["version"] == planted.version and first["predecessor"] == planted.predecessor
    assert first["ratio"] == pytest.approx(planted.slowdown)
    lo, hi = first["interval"]
    assert lo < planted.slowdown < hi
    assert all(v["bisection"] == planted.bisection for v in confirmed)
    suspected = [v for v in newest["verdicts"] if v["rank"] == SUSPECTED]
    assert [v["cell"] for v in suspected] == [planted.suspected_cell]
    assert suspected[0]["status"] == "suspected" and suspected[0]["bisection"] is None
    rest = newest["verdicts"][len(confirmed) + len(suspected) :]
    assert rest and all(v["rank"] == OTHER and v["status"] == "other" for v in rest)


def test_versions_marked_where_they_changed(doc: dict, store: tuple[Path, Planted]) -> None:
    _, planted = store
    s = _series(doc, planted.cell)
    assert (s["library"], s["transport"]) == (planted.library, planted.transport)
    # the legacy nights (library_versions only) are in the same series as the newer ones
    assert s["i"] == list(range(NIGHTS))
    expected = []
    for n in range(NIGHTS):
        v = version_at(PLANTED_PAIR, n, NIGHTS - 1)
        if not expected or expected[-1][1] != v:
            expected.append([n, v])
    assert s["versions"] == expected
    assert s["versions"][-1] == [planted.night, planted.version]
    assert len(s["versions"]) >= 3  # the pin moved at least once before the planted release
    assert len(doc["series"]) == 12  # one per cell: no legacy series of their own


def test_regression_mark_linked_to_its_bisection(doc: dict, store: tuple[Path, Planted]) -> None:
    _, planted = store
    s = _series(doc, planted.cell)
    (mark,) = s["regressions"]
    assert (mark["i"], mark["metric"], mark["version"]) == (
        planted.night,
        planted.metric,
        planted.version,
    )
    assert mark["bisection"] == planted.bisection
    assert mark["y"] == s["metrics"][planted.metric][0][-1]  # at the cell's median that night
    (b,) = doc["bisections"]
    assert b["id"] == planted.bisection and b["first_bad"] == planted.first_bad
    assert b["status"] == "found" and len(b["steps"]) == 2
    others = [x for x in doc["series"] if x is not s]
    assert not any(x["regressions"] for x in others)


def test_matrix_verdicts_against_the_predecessor(doc: dict, store: tuple[Path, Planted]) -> None:
    _, planted = store
    libs = {m["library"]: m["versions"] for m in doc["matrix"]}
    assert set(libs) == {p[2] for p in PAIRS}
    kcp = {v["version"]: v for v in libs[planted.library]}
    new = kcp[planted.version]
    assert new["summary"] == "confirmed slower" and new["predecessor"] == planted.predecessor
    assert (new["first"], new["last"], new["nights"]) == (planted.night, planted.night, 1)
    assert new["verdicts"][0]["confirmed"] is True
    assert kcp[planted.predecessor]["summary"] in ("no difference", None)
    first = libs[planted.library][0]
    assert first["first"] == 0 and first["summary"] is None  # nothing before it to compare
    broken = {v["version"]: v for v in libs[planted.broken_library]}[planted.broken_version]
    assert broken["summary"] == "does not build" and broken["first"] is None
    assert broken["verdicts"][0]["build_error"]
    # every version measured is there, in release order
    versions = [v["version"] for v in libs[planted.library]]
    assert versions == sorted(versions, key=lambda v: [int(x) for x in v[1:].split(".")])


def test_each_night_has_its_median_interval(doc: dict, store: tuple[Path, Planted]) -> None:
    root, planted = store
    s = _series(doc, planted.cell)
    night = sorted((root / planted.campaign).glob("*.csv"))[7]
    row = pl.read_csv(night).filter(pl.col("cell_id") == planted.cell).row(0, named=True)
    for metric in ("rtt_net_p50_us", "server_rss_bytes"):
        runs = np.array([float(v) for v in row[metric + "__runs"].split(";")])
        iv = quantile_ci(runs, 0.5, level=doc["level"])
        med, lo, hi = (values[7] for values in s["metrics"][metric])
        assert (lo, hi) == (sig(iv.low), sig(iv.high))
        assert med == sig(row[metric])
        assert lo <= med <= hi
    json.dumps(doc, allow_nan=False)  # strict JSON: no NaN anywhere


def _night(folder: Path, n: int, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    base = {"time": f"2026-02-0{n + 1}T02:00:00+00:00", "night_id": f"n{n}", "hardware": "h",
            "cpu_count": 2}  # fmt: skip
    pl.DataFrame([base | r for r in rows]).write_csv(folder / f"2026020{n + 1}T020000Z-n{n}.csv")


def test_a_bare_store_and_a_version_measured_beside_the_pin(tmp_path: Path) -> None:
    """No verdicts or bisections folder, no provenance columns but library_versions; on the
    second night a new version is measured beside the pinned cell: a point beside the line."""
    folder = tmp_path / "c"
    pinned = "reference-kcp-p100-active-lan-d12-0123abcd"
    other = "reference-v5.7.5-kcp-p100-active-lan-d12-89abcdef"
    runs = "2000;2010;1990;2005;1995;2002"
    for n in range(3):
        rows = [{"cell_id": pinned, "library_versions": "pinned", "rtt_net_p50_us": 2001.0,
                 "rtt_net_p50_us__runs": runs}]  # fmt: skip
        if n == 1:
            rows.append({"cell_id": other, "library_versions": "v5.7.5",
                         "rtt_net_p50_us": 2500.0, "rtt_net_p50_us__runs": ""})  # fmt: skip
        _night(folder, n, rows)
    doc = site_document(tmp_path, "c")
    assert doc["newest"] is None and doc["matrix"][0]["library"] == "reference/kcp"
    assert cell_shape(other, "v5.7.5") == cell_shape(pinned, "pinned")
    (s,) = doc["series"]
    assert s["i"] == [0, 1, 2] and s["others"]["i"] == [1]
    assert s["others"]["version"] == ["v5.7.5"] and s["others"]["cell"] == [other]
    assert s["others"]["metrics"]["rtt_net_p50_us"] == [[2500.0], [None], [None]]
    assert list(doc["metrics"]) == ["rtt_net_p50_us"]
    bad = folder / "verdicts" / "x.json"
    bad.parent.mkdir()
    bad.write_text("[1, 2]")
    with pytest.raises(HistoryError, match=r"x\.json: expected a JSON object"):
        site_document(tmp_path, "c")


def test_page_puts_the_regression_first_and_loads_nothing(
    doc: dict, store: tuple[Path, Planted], tmp_path: Path
) -> None:
    _, planted = store
    index = write_site(doc, tmp_path / "site")
    html = index.read_text()
    first = html[: html.index('id="trends"')]
    assert "Confirmed regression: " + planted.library in first
    assert f'href="#bisection-{planted.bisection}"' in first
    assert f'id="bisection-{planted.bisection}"' in html
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html
    assert (tmp_path / "site" / "site.js").is_file()
    with pytest.raises(SiteError, match="schema"):
        page(doc | {"schema": 99})
    # a library name is text, never markup
    odd = json.loads(json.dumps(doc))
    odd["series"][0]["library"] = "<script>x</script>"
    assert "<script>x</script>" not in page(odd).split('id="site-data"')[0]
