"""Render a campaign's report (report/campaign.qmd) into one self-contained HTML file.

    python -m report.render data/results/<campaign> --raw data/raw/<campaign> --out FILE.html

With Quarto on PATH: `quarto render`. Without it (Quarto cannot be installed everywhere): the
same .qmd through R's rmarkdown and knitr, which read its `output:` and `params:` keys and its R
chunks. Either way the source is copied to a temporary directory first, so figures and
intermediates never land in the checkout and two renders do not collide; the HTML is moved into
place atomically.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "campaign.qmd"
TIMEOUT_S = 600


class RenderError(RuntimeError):
    """The renderer failed; the message carries its output."""


def engine() -> str:
    if shutil.which("quarto"):
        return "quarto"
    if shutil.which("Rscript"):
        return "rmarkdown"
    raise RenderError("neither quarto nor Rscript found; run workflow/setup.sh (installs R)")


def _r_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render(results: Path, raw: Path, out: Path) -> str:
    """Render and return the engine used."""
    which = engine()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="netstick-report-") as tmp:
        work = Path(tmp)
        shutil.copy(SOURCE, work / SOURCE.name)
        shutil.copy(HERE / "_quarto.yml", work / "_quarto.yml")
        html = work / "report.html"
        if which == "quarto":
            argv = [
                "quarto", "render", str(work / SOURCE.name), "--output", html.name,
                "-P", f"results:{results.resolve()}", "-P", f"raw:{raw.resolve()}",
            ]  # fmt: skip
        else:
            call = (
                f"rmarkdown::render({_r_string(str(work / SOURCE.name))}, "
                f"output_file = {_r_string(str(html))}, intermediates_dir = {_r_string(tmp)}, "
                f"params = list(results = {_r_string(str(results.resolve()))}, "
                f"raw = {_r_string(str(raw.resolve()))}), quiet = TRUE)"
            )
            argv = ["Rscript", "-e", call]
        done = subprocess.run(
            argv, cwd=work, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
        if done.returncode != 0 or not html.is_file():
            raise RenderError(
                f"{which} failed ({done.returncode}):\n{(done.stdout + done.stderr)[-4000:]}"
            )
        tmp_out = out.with_name(f".{out.name}.tmp-{os.getpid()}")
        shutil.copy(html, tmp_out)
        os.replace(tmp_out, out)
    return which


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m report.render", description=__doc__)
    ap.add_argument("results", type=Path, help="data/results/<campaign>")
    ap.add_argument("--raw", type=Path, required=True, help="data/raw/<campaign> (plan.json)")
    ap.add_argument("--out", type=Path, required=True, help="the HTML file to write")
    args = ap.parse_args(argv)
    try:
        which = render(args.results, args.raw, args.out)
    except RenderError as exc:
        print(f"report: {exc}")
        return 1
    print(f"report ({which}): {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
