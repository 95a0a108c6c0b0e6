"""The nightly's trend site in the real headless Chromium (Playwright driving /usr/bin/chromium;
no browser is downloaded): a synthetic history with a planted regression is built into a site
by the CLI, loaded from file:// (offline: nothing but the site's own files is requested), and
it must load with no console error, show the planted regression on the first screen of a laptop
(1366 x 768), draw the regressed cell's trend with a regression mark linked to its bisection,
and leave a screenshot in NETSTICK_TEST_ARTIFACTS (default data/test-artifacts/)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from workflow.bench.synthetic_history import Planted, write_history

from support.marks import CHROMIUM, needs_chromium
from support.paths import NETSTICK, REPO
from support.snapshot import ink_fraction

pytestmark = needs_chromium
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (requirements.txt pins it)"
)

VIEWPORT = {"width": 1366, "height": 768}
NIGHTS = 180  # half a year keeps the test quick; bench site builds the full year
BUDGET_S = 45.0  # each test, with the browser's start, well under a minute


def artifacts() -> Path:
    out = Path(os.environ.get("NETSTICK_TEST_ARTIFACTS") or REPO / "data" / "test-artifacts")
    out.mkdir(parents=True, exist_ok=True)
    return out


@dataclass
class Loaded:
    page: Any
    planted: Planted
    site: Path
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    root = tmp_path_factory.mktemp("trend-site")
    planted = write_history(root / "history", nights=NIGHTS, cells=30, legacy_nights=20)
    site = root / "site"
    done = subprocess.run(
        [str(NETSTICK), "history", "site", planted.campaign, "--history-dir",
         str(root / "history"), "--out", str(site)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.set_default_timeout(20_000)
            found = Loaded(page, planted, site)

            def console(msg: Any) -> None:
                if msg.type in ("error", "warning"):
                    found.errors.append(f"console {msg.type}: {msg.text}")

            page.on("console", console)
            page.on("pageerror", lambda exc: found.errors.append(f"exception: {exc}"))
            page.on("requestfailed", lambda r: found.errors.append(f"request failed: {r.url}"))
            page.on("request", lambda r: found.requests.append(r.url))
            page.goto((site / "index.html").as_uri(), wait_until="load")
            page.wait_for_selector("html[data-drawn=yes]")
            yield found
        finally:
            browser.close()


def _inside_viewport(box: dict[str, float] | None) -> bool:
    return (
        box is not None
        and box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= VIEWPORT["width"]
        and box["y"] + box["height"] <= VIEWPORT["height"]
    )


def test_loads_offline_without_console_errors(loaded: Loaded) -> None:
    assert loaded.errors == []
    site = loaded.site.as_uri()
    assert loaded.requests, "the browser requested nothing"
    assert all(url.startswith(site + "/") for url in loaded.requests), loaded.requests
    assert {url.rsplit("/", 1)[1] for url in loaded.requests} == {"index.html", "site.js"}
    # every chart was drawn: one SVG per series and metric
    assert loaded.page.locator("figure.chart svg.trend").count() == 30 * 5


def test_planted_regression_on_the_first_screen(loaded: Loaded) -> None:
    t0 = time.monotonic()
    page, planted = loaded.page, loaded.planted
    page.evaluate("window.scrollTo(0, 0)")
    card = page.locator("article.card.confirmed").filter(has_text=planted.library).first
    assert card.is_visible()
    assert _inside_viewport(card.bounding_box()), card.bounding_box()
    text = card.inner_text()
    for words in (planted.transport, "RTT p50", planted.version, planted.predecessor,
                  f"ratio {planted.slowdown:.3f}", "95 % interval", planted.first_bad):  # fmt: skip
        assert words in text, (words, text)
    # the link goes to the bisection, which names the first bad commit
    card.get_by_role("link", name=f"Bisection: first bad {planted.first_bad}").click()
    assert page.evaluate("location.hash") == f"#bisection-{planted.bisection}"
    target = page.locator(f"#bisection-{planted.bisection}")
    assert target.is_visible() and _inside_viewport(target.bounding_box())
    assert planted.first_bad in target.inner_text()
    assert time.monotonic() - t0 < BUDGET_S


def test_regressed_cell_trend_has_its_regression_mark(loaded: Loaded) -> None:
    page, planted = loaded.page, loaded.planted
    svg = page.locator(f'svg.trend[data-metric="{planted.metric}"][data-cells~="{planted.cell}"]')
    assert svg.count() == 1
    figure = page.locator("figure.chart").filter(has=svg)
    mark = svg.locator("g.regression-mark")
    assert mark.count() == 1
    assert mark.get_attribute("data-night") == str(planted.night)
    assert svg.locator(f'a[href="#bisection-{planted.bisection}"]').count() == 1
    assert svg.locator("path.median").count() >= 1 and svg.locator("path.band").count() >= 1
    assert svg.locator("g.version-mark").count() >= 3  # the pin moved, then the new release
    # accessible: a role, a title and a description naming the cell's library and regressions
    assert svg.get_attribute("role") == "img"
    assert planted.library in svg.locator("title").first.inner_html()
    assert "1 confirmed regression" in svg.locator("desc").inner_html()
    assert planted.version in figure.locator("figcaption").inner_text()
    # no other chart of that metric has a regression mark
    marked = page.locator(f'svg.trend[data-metric="{planted.metric}"]:has(g.regression-mark)')
    assert marked.count() == 1
    figure.scroll_into_view_if_needed()
    shot = artifacts() / "trend-site-regressed-chart.png"
    figure.screenshot(path=str(shot))
    assert shot.stat().st_size > 5_000


def test_screenshot_of_the_first_screen_is_kept(loaded: Loaded) -> None:
    page = loaded.page
    page.evaluate("location.hash = ''; window.scrollTo(0, 0)")
    shot = artifacts() / "trend-site.png"
    shot.unlink(missing_ok=True)
    page.screenshot(path=str(shot))
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert ink_fraction(shot) > 0.03  # words and cards, not a blank page
