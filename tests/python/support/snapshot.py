"""Pictures of a rendered report, to look at and to test: headless Chromium and pdftoppm.

    .venv/bin/python tests/python/support/snapshot.py report/_output/<campaign>/index.html \
        --out DIR [--pdf FILE.pdf]

writes DIR/page.png (the top of the page as a browser shows it, 1280 px wide), DIR/print-N.png
(every page of Chromium's print of the HTML, so the whole report can be looked at) and, with
--pdf, DIR/pdf-N.png (the pages of the typst PDF). Chromium runs headless with a throw-away
profile; the page is self-contained, so it loads nothing from the network.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

TIMEOUT_S = 120
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


class SnapshotError(RuntimeError):
    """A tool is missing or failed; the message says which and why."""


def browser() -> str:
    for name in BROWSERS:
        if path := shutil.which(name):
            return path
    raise SnapshotError(
        f"no headless browser found (tried {', '.join(BROWSERS)}); apt-get install chromium"
    )


def _chromium(html: Path, *flags: str) -> None:
    with tempfile.TemporaryDirectory(prefix="netstick-chromium-") as profile:
        argv = [
            browser(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--disable-dev-shm-usage",  # containers often have a small /dev/shm
            "--no-first-run", f"--user-data-dir={profile}", *flags, html.resolve().as_uri(),
        ]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise SnapshotError(f"chromium failed ({done.returncode}): {done.stderr[-2000:]}")


def screenshot(html: Path, png: Path, width: int = 1280, height: int = 2400) -> Path:
    _chromium(html, f"--window-size={width},{height}", f"--screenshot={png}")
    if not png.is_file():
        raise SnapshotError(f"chromium wrote no {png}")
    return png


def print_pdf(html: Path, pdf: Path) -> Path:
    _chromium(html, "--no-pdf-header-footer", f"--print-to-pdf={pdf}")
    if not pdf.is_file():
        raise SnapshotError(f"chromium wrote no {pdf}")
    return pdf


def pdf_pages(pdf: Path, prefix: Path, dpi: int = 50) -> list[Path]:
    """Every page of pdf as prefix-N.png (pdftoppm from poppler-utils)."""
    if shutil.which("pdftoppm") is None:
        raise SnapshotError("pdftoppm not found; apt-get install poppler-utils")
    done = subprocess.run(
        ["pdftoppm", "-png", "-r", str(dpi), str(pdf), str(prefix)],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SnapshotError(f"pdftoppm failed on {pdf}: {done.stderr.strip()}")
    return sorted(
        prefix.parent.glob(f"{prefix.name}-*.png"), key=lambda p: int(p.stem.split("-")[-1])
    )


def ink_fraction(png: Path) -> float:
    """Share of pixels that are not (near) white: a blank or failed render has almost none."""
    from PIL import Image

    with Image.open(png) as im:
        grey = im.convert("L")
        hist = grey.histogram()
    total = sum(hist)
    return sum(hist[:240]) / total if total else 0.0


def snapshot(html: Path, out: Path, pdf: Path | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    shots = [screenshot(html, out / "page.png")]
    printed = print_pdf(html, out / "print.pdf")
    shots += pdf_pages(printed, out / "print")
    if pdf is not None:
        shots += pdf_pages(pdf, out / "pdf")
    return shots


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="tests/python/support/snapshot.py", description=__doc__)
    ap.add_argument("html", type=Path, help="a rendered report (index.html)")
    ap.add_argument("--out", type=Path, required=True, help="directory for the PNG files")
    ap.add_argument("--pdf", type=Path, help="also the pages of this PDF")
    args = ap.parse_args(argv)
    for path, flag in ((args.html, "html"), (args.pdf, "--pdf")):
        if path is not None and not path.is_file():
            ap.error(f"{flag}: {path} does not exist")
    try:
        shots = snapshot(args.html, args.out, args.pdf)
    except SnapshotError as exc:
        print(f"snapshot: {exc}")
        return 1
    for p in shots:
        print(f"{p}  ({100 * ink_fraction(p):.1f} % ink)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
