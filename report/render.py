"""Render a report (.qmd in report/) into one self-contained HTML file, and optionally a PDF.

    netstick report CAMPAIGN --step render   ->   report/_output/<campaign>/index.html, .pdf

With Quarto on PATH: `quarto render` (HTML, and typst for the PDF). Without it (Quarto cannot be
installed everywhere): the same .qmd through R's rmarkdown and knitr, which read its `output:`
and `params:` keys and its R chunks; the PDF then goes Markdown -> pandoc 3 (pypandoc-binary) ->
typst (typst-py), because Debian's pandoc 2.17 has no typst writer. Either way the sources are
copied to a temporary directory first, so figures and intermediates never land in the checkout
and two renders do not collide; outputs are moved into place atomically.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from workflow.files import replace_atomically

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "campaign.qmd"
TIMEOUT_S = 600
# What a render needs besides the .qmd itself: the project file and the shared R helpers.
SUPPORT = ("_quarto.yml", "R", "typst-tables.lua")
# Tables in the PDF: wide ones (the cells table has 13 columns) printed over each other at 10 pt
# with the Markdown's column widths; 7 pt, 3 pt cell insets and widths from the content
# (typst-tables.lua) keep every word apart (tests/python/support/pdf_words.py checks the PDFs).
TABLE_TEXT_PT = 7


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


def _r_params(params: Mapping[str, str]) -> str:
    return "list(" + ", ".join(f"{k} = {_r_string(v)}" for k, v in params.items()) + ")"


def _run(argv: list[str], cwd: Path, what: str, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False, env=env
    )
    if done.returncode != 0:
        raise RenderError(
            f"{what} failed ({done.returncode}):\n{(done.stdout + done.stderr)[-4000:]}"
        )


def _place(built: Path, out: Path) -> None:
    if not built.is_file():
        raise RenderError(f"the renderer reported success but wrote no {built.name}")
    replace_atomically(out, lambda tmp: shutil.copy(built, tmp))


def _pandoc3() -> str:
    try:
        import pypandoc  # type: ignore[import-untyped]

        return str(pypandoc.get_pandoc_path())
    except (ImportError, OSError) as exc:
        raise RenderError(f"the PDF needs pandoc 3 from pypandoc-binary: {exc}") from exc


def _pdf_via_typst(work: Path, qmd: Path, params: Mapping[str, str]) -> Path:
    """knitr -> Markdown with PNG figures -> pandoc 3 -> typst -> PDF."""
    md = work / "report.md"
    call = (
        f"rmarkdown::render({_r_string(str(qmd))}, output_format = rmarkdown::md_document("
        f'variant = "markdown", preserve_yaml = TRUE, fig_width = 9, fig_height = 5, dev = "png"),'
        f" output_file = {_r_string(str(md))}, intermediates_dir = {_r_string(str(work))}, "
        f"params = {_r_params(params)}, quiet = TRUE)"
    )
    _run(["Rscript", "-e", call], work, "rmarkdown (Markdown for the PDF)")
    # knitr names figures by absolute path; typst reads only below its root (the work dir).
    md.write_text(md.read_text().replace(f"{work}/", ""))
    typ = work / "report.typ"
    _run(
        [
            _pandoc3(), str(md), "-s", "-t", "typst", "-o", str(typ),
            # pandoc wraps tables in figures, which typst never breaks across pages
            "-V", "header-includes=#show figure: set block(breakable: true)\n"
            f"#show table: set text(size: {TABLE_TEXT_PT}pt)\n#set table(inset: 3pt)",
            "--lua-filter", "typst-tables.lua",
            "-V", "papersize=a4", "-V", "fontsize=10pt",
        ],
        work,
        "pandoc to typst",
    )  # fmt: skip
    try:
        import typst  # type: ignore[import-untyped]
    except ImportError as exc:
        raise RenderError(f"the PDF needs typst-py: {exc}") from exc
    pdf = work / "report.pdf"
    try:
        typst.compile(str(typ), output=str(pdf), root=str(work))
    except Exception as exc:  # typst raises its own error types with the diagnostics
        raise RenderError(f"typst failed: {exc}") from exc
    return pdf


def render(
    params: Mapping[str, str],
    out: Path,
    source: Path = SOURCE,
    pdf: Path | None = None,
) -> str:
    """Render source with params into out (and pdf, if given); return the engine used."""
    which = engine()
    with tempfile.TemporaryDirectory(prefix="netstick-report-") as tmp:
        work = Path(tmp)
        qmd = work / source.name
        shutil.copy(source, qmd)
        for name in SUPPORT:
            src = source.parent / name
            if src.is_dir():
                shutil.copytree(src, work / name)
            elif src.is_file():
                shutil.copy(src, work / name)
        html = work / "report.html"
        if which == "quarto":
            flags = [x for k, v in params.items() for x in ("-P", f"{k}:{v}")]
            _run(["quarto", "render", str(qmd), "--output", html.name, *flags], work, "quarto")
        else:
            call = (
                f"rmarkdown::render({_r_string(str(qmd))}, output_file = {_r_string(str(html))}, "
                f"intermediates_dir = {_r_string(tmp)}, params = {_r_params(params)}, quiet = TRUE)"
            )
            _run(["Rscript", "-e", call], work, "rmarkdown")
        _place(html, out)
        if pdf is not None:
            if which == "quarto":
                flags = [x for k, v in params.items() for x in ("-P", f"{k}:{v}")]
                built = work / "report.pdf"
                _run(
                    ["quarto", "render", str(qmd), "--to", "typst", "--output", built.name, *flags],
                    work,
                    "quarto (typst)",
                )
            else:
                built = _pdf_via_typst(work, qmd, params)
            _place(built, pdf)
    return which
