"""What every CSV log's checks share: the whole-file checks, the field patterns, the time window.

Rows are checked with one regular expression per file kind first (in that kind's module); only
rows that fail it are taken apart field by field (field_problems) to say exactly what is wrong,
which keeps a million-row rtt.csv to a few seconds.

Times are checked against the process's lifetime from its meta.json (start_unix_ns ..
end_unix_ns, with WINDOW_SLACK_NS each side for clock reads around the writes). A process killed
before it could rewrite its meta.json has no end_unix_ns: the file's modification time stands in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

# Called once per violation: file name, 1-based line (0: the whole file), message.
Report = Callable[[str, int, str], None]
# (column, pattern or None for free text, what it should be, may be empty)
FieldCheck = tuple[str, re.Pattern[str] | None, str, bool]

WINDOW_SLACK_NS = 5 * 10**9

UINT = r"[0-9]+"
UDEC = r"[0-9]+(?:\.[0-9]+)?"
DEC = r"-?[0-9]+(?:\.[0-9]+)?"
UINT_RE = re.compile(UINT)
UDEC_RE = re.compile(UDEC)
DEC_RE = re.compile(DEC)


class Window:
    """The allowed t_unix_ns range of one file and the words to explain a miss.

    start_unix_ns None: the process's start is unknown, so every time passes; end_unix_ns None:
    the process was killed before it wrote its end, so the file's modification time stands in.
    """

    def __init__(self, start_unix_ns: int | None, end_unix_ns: int | None, path: Path) -> None:
        self.lo: int | None = None
        self.hi: int | None = None
        if start_unix_ns is None:
            return
        end = end_unix_ns if end_unix_ns is not None else path.stat().st_mtime_ns
        self.lo = start_unix_ns - WINDOW_SLACK_NS
        self.hi = end + WINDOW_SLACK_NS
        self.source = "end_unix_ns" if end_unix_ns is not None else "file modification time"

    def problem(self, t: int) -> str | None:
        if self.lo is None or self.hi is None:
            return None
        if t <= 0:
            return f"t_unix_ns {t} is not a positive integer"
        if t < self.lo:
            return (
                f"t_unix_ns {t} is {(self.lo + WINDOW_SLACK_NS - t) / 1e9:.3f} s before the "
                "process started (meta.json start_unix_ns; 5 s of slack allowed)"
            )
        if t > self.hi:
            return (
                f"t_unix_ns {t} is {(t - self.hi + WINDOW_SLACK_NS) / 1e9:.3f} s after the "
                f"process ended ({self.source}; 5 s of slack allowed)"
            )
        return None


def data_lines(path: Path, columns: tuple[str, ...], report: Report) -> list[str] | None:
    """The data lines of a CSV (header excluded), after the whole-file checks; None to skip."""
    name = path.name
    data = path.read_bytes()
    if not data:
        report(name, 0, "empty file: expected at least the header line")
        return None
    cr = data.find(b"\r")
    if cr >= 0:
        report(name, data.count(b"\n", 0, cr) + 1, "line ends with \\r: lines end with \\n only")
        data = data.replace(b"\r", b"")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        report(name, data.count(b"\n", 0, exc.start) + 1, f"not UTF-8 text ({exc.reason})")
        return None
    lines = text.split("\n")
    last = lines.pop()  # "" when the file ends with "\n", else a partial line
    if last:
        report(
            name,
            len(lines) + 1,
            "last line does not end with \\n: logs hold only whole "
            "lines (a partial line after a crash is a violation)",
        )
    if not lines:
        return None
    expected = ",".join(columns)
    if lines[0] != expected:
        report(name, 1, f"header is {lines[0]!r}, expected {expected!r}")
        return None  # with unknown columns the rows cannot be interpreted
    return lines[1:]


def field_problems(fields: list[str], checks: Sequence[FieldCheck]) -> list[str]:
    """Per-field diagnosis of a row that failed the fast pattern."""
    problems = []
    for value, (column, pattern, expected, may_be_empty) in zip(fields, checks, strict=True):
        if value == "" and may_be_empty:
            continue
        if pattern is None:
            continue
        if not pattern.fullmatch(value):
            problems.append(f"{column} {value!r} is not {expected}")
    return problems


def wrong_field_count(fields: list[str], columns: tuple[str, ...]) -> str:
    return (
        f"has {len(fields)} fields, expected {len(columns)} ({','.join(columns)}); "
        "fields never contain commas"
    )
