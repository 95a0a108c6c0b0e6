"""The trend site of one campaign's history: index.html and site.js in a directory, offline.

    netstick history site CAMPAIGN --out DIR        (DIR/index.html, DIR/site.js)

Takes the document stats.history.site_data computed (the CLI hands it over: report imports no
stats) and shapes it: the newest night's verdicts first (a confirmed regression as a card with
its library, transport, metric, ratio and interval and a link to its bisection), then per
library, transport and cell the trend charts (site.js draws them as SVG from the same document,
inline in the page), then the version matrix and the bisections. Every number and word of the
page is here or in site.js; nothing is fetched, so the page works from file:// and on GitHub
Pages alike.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from string import Template
from typing import Any, Final

from report.sentences import SHOWN, fixed, fmt
from workflow.files import write_text

HERE: Final = Path(__file__).parent
TEMPLATE: Final = HERE / "template.html"
SCRIPT: Final = HERE / "site.js"
SITE_SCHEMA: Final = 1  # stats.history.site_data.SITE_SCHEMA
METRIC_LABELS: Final = {
    "rtt_net_p50_us": "RTT p50", "rtt_net_p95_us": "RTT p95", "rtt_net_p99_us": "RTT p99",
    "server_cpu_cores": "server CPU", "server_rss_bytes": "server memory (RSS)",
    "server_cpu_us_per_msg": "server CPU per message",
    "server_instr_per_msg": "server instructions per message",
}  # fmt: skip
STATUS_CLASS: Final = {"confirmed regression": "confirmed", "suspected": "suspected"}
NOTABLE_VERDICTS: Final = ("confirmed slower", "slower", "does not build")
TABLE_ROWS_OPEN: Final = 12  # the other verdicts: more than this many start folded


class SiteError(ValueError):
    """The document cannot be drawn; the message names what is missing."""


def _e(x: Any) -> str:
    return escape("" if x is None else str(x))


def metric_label(metric: str | None, units: Mapping[str, str]) -> str:
    """'RTT p50 (ms)': the metric's name and its shown unit."""
    if metric is None:
        return "metric"
    unit = units.get(metric, "count")
    shown = SHOWN.get(unit, (unit, 1.0))[0]
    return f"{METRIC_LABELS.get(metric, metric)} ({shown})"


def _date(doc: Mapping[str, Any], i: int | None) -> str:
    times = doc["nights"]["time"]
    if i is None or not 0 <= i < len(times) or not times[i]:
        return "?"
    return str(times[i])[:10]


def _pct(ratio: float | None) -> str:
    if ratio is None:
        return "n/a"
    change = (ratio - 1.0) * 100
    word = "slower" if change > 0 else "faster"
    return f"{abs(change):.1f} % {word}" if abs(change) >= 0.05 else "unchanged"


def _r(ratio: float | None) -> str:
    """A ratio with three decimals: 1.004 is not 1."""
    return fixed(ratio, 3)


def _bounds(interval: Any) -> tuple[float | None, float | None]:
    lo, hi = [*(interval or []), None, None][:2]
    return lo, hi


def ratio_text(item: Mapping[str, Any], level: float) -> str:
    """'ratio 1.25 (95 % interval 1.21 to 1.29), 25.0 % slower' or why there is none."""
    if item.get("ratio") is None:
        return "no ratio"
    lo, hi = _bounds(item.get("interval"))
    return (
        f"ratio {_r(item['ratio'])} ({level * 100:g} % interval {_r(lo)} to {_r(hi)}), "
        f"{_pct(item['ratio'])}"
    )


def series_of(doc: Mapping[str, Any], item: Mapping[str, Any]) -> str | None:
    """The key of the series a verdict is about: the one holding its cell, else the first of
    its library and transport."""
    for s in doc["series"]:
        if item.get("cell") and item["cell"] in s["cells"]:
            return str(s["key"])
    for s in doc["series"]:
        if s["library"] == item.get("library") and s["transport"] == item.get("transport"):
            return str(s["key"])
    return None


def _what(item: Mapping[str, Any]) -> str:
    """'v5.6.16 against v5.6.15' (a version) or 'v5.6.16 against the baseline nights' (a cell)."""
    version = item.get("version") or "?"
    if item.get("kind") == "version":
        return f"{version} against {item.get('predecessor') or 'its predecessor'}"
    return f"{version} against the baseline nights"


def _links(doc: Mapping[str, Any], item: Mapping[str, Any]) -> str:
    parts = []
    if item.get("bisection"):
        b = next((b for b in doc["bisections"] if b["id"] == item["bisection"]), None)
        found = f"first bad {b['first_bad']}" if b and b.get("first_bad") else "its bisection"
        parts.append(f'<a href="#bisection-{_e(item["bisection"])}">Bisection: {_e(found)}</a>')
    key = series_of(doc, item)
    if key and item.get("metric"):
        parts.append(f'<a href="#chart-{_e(key)}-{_e(item["metric"])}">Trend</a>')
    return " · ".join(parts)


def _card(doc: Mapping[str, Any], item: Mapping[str, Any]) -> str:
    """A confirmed regression or a suspect as a card: what, how much, where to look."""
    cls = STATUS_CLASS.get(item["status"], "other")
    units = doc["metrics"]
    head = (
        f"{_e(item['status']).capitalize()}: {_e(item.get('library') or '?')} · "
        f"{_e(item.get('transport') or '?')} · {_e(metric_label(item.get('metric'), units))}"
    )
    detail = f"{_e(_what(item))}: {_e(ratio_text(item, doc['level']))}"
    if item["status"] == "suspected":
        detail += (
            "; the confirming re-run did not agree"
            if item.get("confirmed") is False
            else "; awaiting the confirming re-run"
        )
    cell = f'<p class="cell">cell {_e(item["cell"])}</p>' if item.get("cell") else ""
    links = _links(doc, item)
    return (
        f'<article class="card {cls}" data-status="{_e(item["status"])}" '
        f'data-library="{_e(item.get("library"))}" data-transport="{_e(item.get("transport"))}" '
        f'data-metric="{_e(item.get("metric"))}">'
        f'<h3>{head}</h3><p class="detail">{detail}</p>{cell}'
        + (f'<p class="links">{links}</p>' if links else "")
        + "</article>"
    )


def _verdict_row(doc: Mapping[str, Any], item: Mapping[str, Any]) -> str:
    verdict = item.get("verdict") or ""
    if item.get("build_error"):
        verdict += f": {item['build_error']}"
    elif item.get("bound") is not None and item.get("verdict") == "no difference":
        verdict += f" (within ±{fmt(item['bound'] * 100)} %)"
    cells = [
        item.get("library"), item.get("transport"),
        METRIC_LABELS.get(str(item.get("metric")), item.get("metric")), _what(item),
        ratio_text(item, doc["level"]) if item.get("ratio") is not None else "—", verdict,
    ]  # fmt: skip
    return "<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>"


def newest_section(doc: Mapping[str, Any]) -> str:
    """The first screen: the newest night's confirmed regressions and suspects as cards, every
    other verdict in a table."""
    newest = doc.get("newest")
    nights = doc["nights"]["time"]
    head = '<section id="newest" aria-labelledby="newest-h"><h2 id="newest-h">Newest night'
    if not newest:
        return head + f"</h2><p>No verdicts yet: {len(nights)} night(s) measured.</p></section>"
    items = newest["verdicts"]
    confirmed = [it for it in items if it["status"] == "confirmed regression"]
    suspected = [it for it in items if it["status"] == "suspected"]
    rest = [it for it in items if it["status"] not in ("confirmed regression", "suspected")]
    out = [head + f": {_e(_date(doc, newest.get('i')))}</h2>"]
    summary = (
        f"{len(confirmed)} confirmed regression(s), {len(suspected)} suspected, "
        f"{len(rest)} other verdict(s) against {newest.get('baseline_nights', 0)} baseline "
        "night(s)."
    )
    out.append(f'<p class="summary">{_e(summary)}</p>')
    if newest.get("note"):
        out.append(f'<p class="note">{_e(newest["note"])}</p>')
    if not confirmed:
        out.append('<p class="allclear">No confirmed regression on the newest night.</p>')
    out += [_card(doc, it) for it in confirmed + suspected]
    if rest:
        rows = "".join(_verdict_row(doc, it) for it in rest)
        is_open = " open" if len(rest) <= TABLE_ROWS_OPEN else ""
        out.append(
            f"<details{is_open}><summary>{len(rest)} other verdict(s)</summary>"
            '<table class="verdicts"><thead><tr><th scope="col">library</th>'
            '<th scope="col">transport</th><th scope="col">metric</th><th scope="col">what</th>'
            '<th scope="col">ratio</th><th scope="col">verdict</th></tr></thead>'
            f"<tbody>{rows}</tbody></table></details>"
        )
    return "".join(out) + "</section>"


def _regression_links(doc: Mapping[str, Any], s: Mapping[str, Any], metric: str) -> str:
    marks = [r for r in s["regressions"] if r["metric"] == metric]
    if not marks:
        return ""
    parts = []
    for r in marks:
        text = f"{_date(doc, r['i'])}: {r.get('version') or '?'}, ratio {_r(r.get('ratio'))}"
        parts.append(
            f'<a href="#bisection-{_e(r["bisection"])}">{_e(text)}</a>'
            if r.get("bisection")
            else _e(text)
        )
    return f'<p class="marks">Confirmed regressions: {"; ".join(parts)}</p>'


def _figure(doc: Mapping[str, Any], s: Mapping[str, Any], metric: str) -> str:
    label = metric_label(metric, doc["metrics"])
    fid = f"chart-{s['key']}-{metric}"
    return (
        f'<figure class="chart" id="{_e(fid)}" data-series="{_e(s["key"])}" '
        f'data-metric="{_e(metric)}" data-library="{_e(s["library"])}" '
        f'data-transport="{_e(s["transport"])}">'
        f'<div class="plot"></div><figcaption><span class="label">{_e(label)}</span> '
        f'<span class="readout" aria-live="polite"></span>'
        f"{_regression_links(doc, s, metric)}</figcaption></figure>"
    )


def trends_section(doc: Mapping[str, Any]) -> str:
    """Per library, per transport and cell shape, one chart container per metric (site.js
    draws them), with the series' versions in words."""
    by_lib: dict[str, list[Mapping[str, Any]]] = {}
    for s in doc["series"]:
        by_lib.setdefault(s["library"], []).append(s)
    libs = "".join(f'<option value="{_e(lib)}">{_e(lib)}</option>' for lib in by_lib)
    metrics = "".join(
        f'<option value="{_e(m)}">{_e(metric_label(m, doc["metrics"]))}</option>'
        for m in doc["metrics"]
    )
    out = [
        '<section id="trends" aria-labelledby="trends-h"><h2 id="trends-h">Trends</h2>'
        f'<p class="help">Each night\'s median (line) with its {doc["level"] * 100:g} % interval '
        "(band) over the runs; dashed lines where the version changed, red marks where a "
        "regression was confirmed (linked to its bisection), dots for other versions measured "
        "the same night.</p>"
        '<form class="filters" aria-label="filter the charts"><label>library '
        f'<select id="f-library"><option value="">all</option>{libs}</select></label> '
        f'<label>metric <select id="f-metric"><option value="">all</option>{metrics}'
        "</select></label></form>"
        "<noscript><p>The charts need JavaScript; the verdicts, versions and bisections "
        "above and below do not.</p></noscript>"
    ]
    for lib, series in by_lib.items():
        out.append(f'<section class="library" data-library="{_e(lib)}"><h3>{_e(lib)}</h3>')
        for s in series:
            versions = [v for _, v in s["versions"] if v]
            shown = " → ".join(versions[-4:])
            more = f"{len(versions) - 4} earlier, then " if len(versions) > 4 else ""
            out.append(
                f'<section class="series" id="series-{_e(s["key"])}"><h4>{_e(s["transport"])} '
                f'<span class="shape">{_e(s["shape"])}</span></h4>'
                f'<p class="versions">versions: {_e(more)}{_e(shown) or "not recorded"}</p>'
                '<div class="grid">'
                + "".join(_figure(doc, s, m) for m in doc["metrics"])
                + "</div></section>"
            )
        out.append("</section>")
    return "".join(out) + "</section>"


def _verdict_list(found: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for f in found:
        what = f"{f.get('transport') or '?'} {METRIC_LABELS.get(str(f.get('metric')), '')}"
        text = f["verdict"] or "?"
        if f.get("ratio") is not None:
            lo, hi = _bounds(f.get("interval"))
            text += f", ratio {_r(f['ratio'])} [{_r(lo)}, {_r(hi)}]"
        if f.get("confirmed"):
            text += ", confirmed"
        if f.get("build_error"):
            text += f": {f['build_error']}"
        elif f.get("note") and f["verdict"] == "inconclusive":
            text += f" ({f['note']})"
        parts.append(f"<li>{_e(what.strip())}: {_e(text)}</li>")
    return f"<ul>{''.join(parts)}</ul>" if parts else ""


def matrix_section(doc: Mapping[str, Any]) -> str:
    """Every version of every library: when it was measured and its verdicts against its
    predecessor."""
    out = ['<section id="versions" aria-labelledby="versions-h"><h2 id="versions-h">Versions</h2>']
    for lib in doc["matrix"]:
        rows = []
        for v in lib["versions"]:
            measured = (
                f"{_date(doc, v['first'])} to {_date(doc, v['last'])} ({v['nights']} nights)"
                if v["first"] is not None
                else "never measured"
            )
            summary = v.get("summary") or "first measured"
            rows.append(
                f'<tr class="v-{_e(summary.replace(" ", "-"))}"><th scope="row">'
                f"{_e(v['version'])}</th><td>{_e(v.get('predecessor') or '—')}</td>"
                f"<td>{_e((v.get('published') or '—')[:10])}</td><td>{_e(measured)}</td>"
                f"<td>{_e(', '.join(v['transports']) or '—')}</td><td>{_e(summary)}"
                f"{_verdict_list(v['verdicts'])}</td></tr>"
            )
        notable = Counter(
            v["summary"] for v in lib["versions"] if v.get("summary") in NOTABLE_VERDICTS
        )
        counts = ", ".join(f"{n} {what}" for what, n in sorted(notable.items()))
        # Open where something needs a look: a slower version, one that does not build.
        is_open = " open" if notable else ""
        out.append(
            f'<details class="library-versions"{is_open}><summary>{_e(lib["library"])}: '
            f"{len(lib['versions'])} version(s), newest {_e(lib['versions'][-1]['version'])}"
            + (f" ({_e(counts)})" if counts else "")
            + '</summary><table class="matrix"><thead><tr><th scope="col">version</th>'
            '<th scope="col">predecessor</th><th scope="col">published</th>'
            '<th scope="col">measured</th><th scope="col">transports</th>'
            f'<th scope="col">verdict against its predecessor</th></tr></thead><tbody>'
            f"{''.join(reversed(rows))}</tbody></table></details>"
        )
    return "".join(out) + "</section>"


def bisections_section(doc: Mapping[str, Any]) -> str:
    out = [
        '<section id="bisections" aria-labelledby="bisections-h">'
        '<h2 id="bisections-h">Bisections</h2>'
    ]
    if not doc["bisections"]:
        out.append("<p>No bisection yet.</p>")
    for b in reversed(doc["bisections"]):
        outcome = (
            f"first bad {b['first_bad']} (last good {b.get('last_good') or '?'})"
            if b.get("status") == "found"
            else f"inconclusive: {b.get('bound') or 'no bound given'}"
        )
        steps = "".join(
            f"<tr><td>{_e(s['candidate'])}</td><td>{_e(s['against'])}</td>"
            f"<td>{_e(_r(s['ratio']))} [{_e(_r(s['interval'][0]))}, "
            f"{_e(_r(s['interval'][1]))}]</td><td>{_e(s['runs_per_side'])}</td>"
            f"<td>{_e(s['decision'])}</td></tr>"
            for s in b["steps"]
        )
        out.append(
            f'<article class="bisection" id="bisection-{_e(b["id"])}"><h3>{_e(b["library"])} · '
            f"{_e(METRIC_LABELS.get(str(b['metric']), b['metric']))}: {_e(outcome)}</h3>"
            f"<p>{_e(b['good'])} (good) to {_e(b['bad'])} (bad), {b['candidates']} candidates, "
            f"cell {_e(b['cell'])}, night {_e(b['night_id'])}</p>"
            '<table><thead><tr><th scope="col">candidate</th><th scope="col">against</th>'
            '<th scope="col">ratio [interval]</th><th scope="col">runs per side</th>'
            f'<th scope="col">decision</th></tr></thead><tbody>{steps}</tbody></table></article>'
        )
    return "".join(out) + "</section>"


def page(doc: Mapping[str, Any]) -> str:
    """index.html: the sections as HTML and the document inline for site.js."""
    if doc.get("schema") != SITE_SCHEMA:
        raise SiteError(
            f"site document schema {doc.get('schema')!r}: expected {SITE_SCHEMA} "
            "(stats.history.site_data)"
        )
    for key in ("campaign", "nights", "metrics", "series", "matrix", "bisections", "level"):
        if key not in doc:
            raise SiteError(f"site document: no {key!r}")
    view = {
        "labels": {m: metric_label(m, doc["metrics"]) for m in doc["metrics"]},
        "scale": {m: SHOWN.get(u, (u, 1.0))[1] for m, u in doc["metrics"].items()},
    }
    data = json.dumps(
        {**doc, "view": view}, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    nights = doc["nights"]["time"]
    span = f"{len(nights)} nights, {_date(doc, 0)} to {_date(doc, len(nights) - 1)}"
    return Template(TEMPLATE.read_text(encoding="utf-8")).substitute(
        title=_e(f"Netstick nightly: {doc['campaign']}"),
        campaign=_e(doc["campaign"]),
        span=_e(span),
        newest=newest_section(doc),
        trends=trends_section(doc),
        versions=matrix_section(doc),
        bisections=bisections_section(doc),
        # Inside <script> only "</" could end the element early.
        data=data.replace("</", "<\\/"),
    )


def write_site(doc: Mapping[str, Any], out: Path) -> Path:
    """out/index.html, out/site.js and out/.nojekyll (GitHub Pages serves the files as they
    are); the path of index.html."""
    index = write_text(out / "index.html", page(doc))
    write_text(out / "site.js", SCRIPT.read_text(encoding="utf-8"))
    write_text(out / ".nojekyll", "")
    return index
