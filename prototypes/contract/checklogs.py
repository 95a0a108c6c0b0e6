"""Conformance checker for the logs of prototypes/CONTRACT.md section 3 (schema version 1).

check_log_dir(dir) returns every Violation(file, line, message) it finds, in plain words: file
names, headers (exact columns, in order), each row's types and units, event names and who may
write them, meta.json keys, and per-(player, kind) uniqueness of probe sequence numbers. Rows
are written in echo order, so on unreliable channels seq may legitimately arrive out of order:
only duplicates are violations.

Times are checked against the process's lifetime from its meta.json (start_unix_ns ..
end_unix_ns, with 5 s of slack each side for clock reads around the writes). A process killed
before it could rewrite its meta.json has no end_unix_ns: the file's modification time stands in.

Rows are checked with one regular expression per file kind first; only rows that fail it are
taken apart field by field to say exactly what is wrong, which keeps a million-row rtt.csv to a
few seconds.
"""

from __future__ import annotations

import json
import re
from array import array
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from prototypes.contract.columns import (
    EVENT_ROLES,
    EVENTS_COLUMNS,
    FILES_BY_ROLE,
    LOG_FILE_RE,
    META_KEYS_ALWAYS,
    META_KEYS_ON_EXIT,
    META_STATUSES,
    RTT_COLUMNS,
    RTT_KINDS,
    SCHEMA_VERSION,
    TICKS_COLUMNS,
)

__all__ = ["Violation", "check_log_dir"]

WINDOW_SLACK_NS = 5 * 10**9
DEFAULT_MAX_PER_FILE = 50
EXIT_CODES = range(0, 7)  # CONTRACT.md section 2

_UINT = r"[0-9]+"
_UDEC = r"[0-9]+(?:\.[0-9]+)?"
_DEC = r"-?[0-9]+(?:\.[0-9]+)?"
_UINT_RE = re.compile(_UINT)
_UDEC_RE = re.compile(_UDEC)
_DEC_RE = re.compile(_DEC)
_RTT_ROW_RE = re.compile(rf"({_UINT}),({_UINT}),({_UINT}),{_UDEC},(net|app|lib),({_DEC})?")
_EVENTS_ROW_RE = re.compile(rf"({_UINT}),({_UINT})?,([a-z_]+),(?:{_DEC})?,([^,]*)")
# tick_late_us and tick_duration_us are µs like every _us column: decimals (the reference
# prototype writes three decimals); the counters are integers.
_TICKS_ROW_RE = re.compile(rf"({_UINT}),({_UINT}),{_UDEC},{_UDEC}(?:,{_UINT}){{6}}")
_KIND_CODE = {k: i for i, k in enumerate(RTT_KINDS)}
# Events that are about one player and so must name it.
_PER_PLAYER_EVENTS = frozenset({"connect", "probes"})
_PROBES_COUNTS = ("echoed", "lost", "inflight")


@dataclass(frozen=True, slots=True)
class Violation:
    """One way a log directory breaks the contract. line is 1-based; 0 means the whole file."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class _Meta:
    """What the row checks need from a process's meta.json."""

    role: str
    start_unix_ns: int | None
    end_unix_ns: int | None
    first_player: int | None
    players: int | None


class _Reporter:
    """Collects violations, at most max_per_file per file plus one line saying how many more."""

    def __init__(self, max_per_file: int) -> None:
        self.max_per_file = max_per_file
        self.violations: list[Violation] = []
        self._count: dict[str, int] = defaultdict(int)

    def __call__(self, file: str, line: int, message: str) -> None:
        self._count[file] += 1
        if self._count[file] <= self.max_per_file:
            self.violations.append(Violation(file, line, message))

    def finish(self) -> list[Violation]:
        for file, n in self._count.items():
            if n > self.max_per_file:
                self.violations.append(
                    Violation(
                        file,
                        0,
                        f"{n - self.max_per_file} more violations not shown "
                        f"(first {self.max_per_file} shown)",
                    )
                )
        return sorted(self.violations, key=lambda v: (v.file, v.line))


Report = Callable[[str, int, str], None]


def check_log_dir(log_dir: Path | str, max_per_file: int = DEFAULT_MAX_PER_FILE) -> list[Violation]:
    """Check a run's log directory against CONTRACT.md section 3; [] means it conforms."""
    log_dir = Path(log_dir)
    if not log_dir.is_dir():
        return [Violation(str(log_dir), 0, "is not a directory")]
    report = _Reporter(max_per_file)
    files_by_proc: dict[str, set[str]] = defaultdict(set)
    for entry in sorted(log_dir.iterdir()):
        if entry.is_dir():
            report(entry.name, 0, "unexpected directory: a log directory holds only log files")
            continue
        m = LOG_FILE_RE.fullmatch(entry.name)
        if m is None:
            report(
                entry.name,
                0,
                "unexpected file name: expected <proc>.meta.json, <proc>.rtt.csv, "
                "<proc>.events.csv or <proc>.ticks.csv with <proc> = server or client-<k>",
            )
            continue
        files_by_proc[m["proc"]].add(m["suffix"])
    if not files_by_proc:
        report(".", 0, "no log files: expected at least server.meta.json")

    for proc, suffixes in sorted(files_by_proc.items()):
        role = "server" if proc == "server" else "client"
        expected = FILES_BY_ROLE[role]
        for suffix in sorted(suffixes - set(expected)):
            report(f"{proc}.{suffix}", 0, f"a {role} process does not write {suffix} files")
        for suffix in expected:
            if suffix not in suffixes:
                report(f"{proc}.{suffix}", 0, f"missing: every {role} process writes this file")
        meta = (
            _check_meta(log_dir / f"{proc}.meta.json", proc, role, report)
            if ("meta.json" in suffixes)
            else None
        )
        if "rtt.csv" in suffixes and role == "client":
            _check_rtt(log_dir / f"{proc}.rtt.csv", meta, report)
        if "events.csv" in suffixes:
            _check_events(log_dir / f"{proc}.events.csv", role, meta, report)
        if "ticks.csv" in suffixes and role == "server":
            _check_ticks(log_dir / f"{proc}.ticks.csv", meta, report)
    return report.finish()


# -- meta.json --------------------------------------------------------------------------------


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _flag_value(args: Sequence[object], flag: str) -> str | None:
    """Value of a single-dash flag in an argument list (`-flag v` or `-flag=v`), last one wins."""
    value = None
    for i, a in enumerate(args):
        if not isinstance(a, str):
            continue
        if a == flag and i + 1 < len(args) and isinstance(args[i + 1], str):
            value = str(args[i + 1])
        elif a.startswith(flag + "="):
            value = a[len(flag) + 1 :]
    return value


def _check_meta(path: Path, proc: str, role: str, report: Report) -> _Meta | None:
    name = path.name
    try:
        meta: Any = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        report(name, 0, f"not UTF-8 text ({exc.reason})")
        return None
    except json.JSONDecodeError as exc:
        report(name, exc.lineno, f"not valid JSON: {exc.msg} (column {exc.colno})")
        return None
    if not isinstance(meta, dict):
        report(name, 1, f"must be a JSON object, found {type(meta).__name__}")
        return None

    missing = [k for k in META_KEYS_ALWAYS if k not in meta]
    if missing:
        report(name, 0, f"missing keys: {', '.join(missing)}")
    if meta.get("status") == "exited":
        missing_exit = [k for k in META_KEYS_ON_EXIT if k not in meta]
        if missing_exit:
            report(name, 0, f'status is "exited" but keys are missing: {", ".join(missing_exit)}')

    def want(key: str, ok: bool, expected: str) -> None:
        if key in meta and not ok:
            report(name, 0, f"key {key!r} is {json.dumps(meta[key])}, expected {expected}")

    want(
        "schema",
        _is_int(meta.get("schema")) and meta.get("schema") == SCHEMA_VERSION,
        f"{SCHEMA_VERSION} (log schema version)",
    )
    want("role", meta.get("role") == role, f'"{role}" (the file is {name})')
    for key in ("prototype", "transport", "workload", "run_id", "host", "exit_reason"):
        want(key, isinstance(meta.get(key), str), "a string")
    want(
        "library_versions",
        isinstance(meta.get("library_versions"), dict)
        and all(isinstance(v, str) for v in meta["library_versions"].values()),
        "an object of library name -> version string",
    )
    want(
        "args",
        isinstance(meta.get("args"), list) and all(isinstance(a, str) for a in meta["args"]),
        "a list of strings",
    )
    for key in ("params", "transport_options", "effective_channels"):
        want(key, isinstance(meta.get(key), dict), "an object")
    want("seed", _is_int(meta.get("seed")) and meta["seed"] >= 0, "an integer >= 0")
    want("pid", _is_int(meta.get("pid")) and meta["pid"] > 0, "an integer > 0")
    want(
        "start_unix_ns",
        _is_int(meta.get("start_unix_ns")) and meta["start_unix_ns"] > 0,
        "an integer > 0 (ns since the Unix epoch)",
    )
    want("status", meta.get("status") in META_STATUSES, " or ".join(map(json.dumps, META_STATUSES)))
    want(
        "exit_code",
        _is_int(meta.get("exit_code")) and meta["exit_code"] in EXIT_CODES,
        "an integer exit code from CONTRACT.md section 2 (0-6)",
    )

    start = meta.get("start_unix_ns") if _is_int(meta.get("start_unix_ns")) else None
    end = meta.get("end_unix_ns") if _is_int(meta.get("end_unix_ns")) else None
    want(
        "end_unix_ns",
        end is not None and (start is None or end >= start),
        "an integer >= start_unix_ns (ns since the Unix epoch)",
    )
    if end is not None and start is not None and end < start:
        end = None

    first_player = players = None
    args = meta.get("args")
    if role == "client" and isinstance(args, list):
        first_text = _flag_value(args, "-first-player") or "0"
        players_text = _flag_value(args, "-players") or "1"
        first_player = int(first_text) if first_text.isdigit() else None
        players = int(players_text) if players_text.isdigit() else None
        if first_player is not None and proc != f"client-{first_player}":
            report(
                name,
                0,
                f"args say -first-player {first_player}, so the files must be named "
                f"client-{first_player}.*, not {proc}.*",
            )
    return _Meta(role, start, end, first_player, players)


# -- CSV files --------------------------------------------------------------------------------


class _Window:
    """The allowed t_unix_ns range of one file and the words to explain a miss."""

    def __init__(self, meta: _Meta | None, path: Path) -> None:
        self.lo: int | None = None
        self.hi: int | None = None
        if meta is None or meta.start_unix_ns is None:
            return
        end = meta.end_unix_ns if meta.end_unix_ns is not None else path.stat().st_mtime_ns
        self.lo = meta.start_unix_ns - WINDOW_SLACK_NS
        self.hi = end + WINDOW_SLACK_NS
        self.source = "end_unix_ns" if meta.end_unix_ns is not None else "file modification time"

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


def _lines(path: Path, columns: tuple[str, ...], report: Report) -> list[str] | None:
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


def _field_problems(
    fields: list[str], checks: Sequence[tuple[str, re.Pattern[str] | None, str, bool]]
) -> list[str]:
    """Per-field diagnosis of a row that failed the fast pattern.

    checks: (column, pattern or None for free text, what it should be, may be empty).
    """
    problems = []
    for value, (column, pattern, expected, may_be_empty) in zip(fields, checks, strict=True):
        if value == "" and may_be_empty:
            continue
        if pattern is None:
            continue
        if not pattern.fullmatch(value):
            problems.append(f"{column} {value!r} is not {expected}")
    return problems


def _wrong_field_count(fields: list[str], columns: tuple[str, ...]) -> str:
    return (
        f"has {len(fields)} fields, expected {len(columns)} ({','.join(columns)}); "
        "fields never contain commas"
    )


_RTT_FIELD_CHECKS = (
    ("t_unix_ns", _UINT_RE, "a positive integer (ns since the Unix epoch)", False),
    ("player", _UINT_RE, "an integer >= 0", False),
    ("seq", _UINT_RE, "an integer >= 0", False),
    ("rtt_us", _UDEC_RE, "a decimal number >= 0 (microseconds)", False),
    ("kind", re.compile("net|app|lib"), "one of net, app, lib", False),
    ("send_late_us", _DEC_RE, "a decimal number (microseconds) or empty", True),
)


def _check_rtt(path: Path, meta: _Meta | None, report: Report) -> None:
    name = path.name
    lines = _lines(path, RTT_COLUMNS, report)
    if lines is None:
        return
    window = _Window(meta, path)
    lo = window.lo if window.lo is not None else 1
    hi = window.hi if window.hi is not None else 1 << 63
    p_lo = p_hi = None
    if meta is not None and meta.first_player is not None and meta.players is not None:
        p_lo, p_hi = meta.first_player, meta.first_player + meta.players - 1
    # (player, kind, seq, line) of every row, for the duplicate check at the end.
    keys = array("q")
    match = _RTT_ROW_RE.fullmatch
    for lineno, line in enumerate(lines, start=2):
        m = match(line)
        if m is not None:
            t_text, player_text, seq_text, kind, late = m.groups()
            t = int(t_text)
            if not lo <= t <= hi:
                report(name, lineno, window.problem(t) or f"t_unix_ns {t} is not positive")
        else:
            fields = line.split(",")
            if len(fields) != len(RTT_COLUMNS):
                report(name, lineno, _wrong_field_count(fields, RTT_COLUMNS))
                continue
            problems = _field_problems(fields, _RTT_FIELD_CHECKS)
            for p in problems:
                report(name, lineno, p)
            t_text, player_text, seq_text, _, kind, late = fields
            if _UINT_RE.fullmatch(t_text) and (problem := window.problem(int(t_text))):
                report(name, lineno, problem)
            if not (
                _UINT_RE.fullmatch(player_text)
                and _UINT_RE.fullmatch(seq_text)
                and kind in _KIND_CODE
            ):
                continue
        player = int(player_text)
        if p_lo is not None and p_hi is not None and not p_lo <= player <= p_hi:
            report(
                name,
                lineno,
                f"player {player} is not one of this client's players "
                f"{p_lo}..{p_hi} (from -first-player and -players in meta.json)",
            )
        if kind == "lib" and late:
            report(name, lineno, f"send_late_us is {late!r} but must be empty for kind lib")
        keys.extend((player, _KIND_CODE[kind], int(seq_text), lineno))
    _report_duplicate_seqs(name, keys, report)


def _report_duplicate_seqs(name: str, keys: array[int], report: Report) -> None:
    rows = np.frombuffer(keys, dtype=np.int64).reshape(-1, 4)
    if rows.shape[0] < 2:
        return
    order = np.lexsort((rows[:, 3], rows[:, 2], rows[:, 1], rows[:, 0]))
    s = rows[order]
    same = np.all(s[1:, :3] == s[:-1, :3], axis=1)
    for i in np.flatnonzero(same):
        # s is sorted by line within equal keys, so s[i] is the earlier row of the pair.
        player, kind_code, seq, line = (int(x) for x in s[i + 1])
        first_line = int(s[i, 3])
        report(
            name,
            line,
            f"seq {seq} of player {player} kind {RTT_KINDS[kind_code]} "
            f"repeats line {first_line}: seq is unique per player and kind",
        )


_EVENTS_FIELD_CHECKS = (
    ("t_unix_ns", _UINT_RE, "a positive integer (ns since the Unix epoch)", False),
    ("player", _UINT_RE, "an integer >= 0 or empty", True),
    ("event", None, "", False),  # unknown names are reported against the table below
    ("value", _DEC_RE, "a number or empty", True),
    ("detail", None, "", True),
)


def _check_events(path: Path, role: str, meta: _Meta | None, report: Report) -> None:
    name = path.name
    lines = _lines(path, EVENTS_COLUMNS, report)
    if lines is None:
        return
    window = _Window(meta, path)
    for lineno, line in enumerate(lines, start=2):
        m = _EVENTS_ROW_RE.fullmatch(line)
        fields = line.split(",")
        if m is None:
            if len(fields) != len(EVENTS_COLUMNS):
                report(name, lineno, _wrong_field_count(fields, EVENTS_COLUMNS))
                continue
            for p in _field_problems(fields, _EVENTS_FIELD_CHECKS):
                report(name, lineno, p)
        t_text, player, event, value, detail = fields
        if _UINT_RE.fullmatch(t_text) and (problem := window.problem(int(t_text))):
            report(name, lineno, problem)
        roles = EVENT_ROLES.get(event)
        if roles is None:
            report(
                name,
                lineno,
                f"event {event!r} is not in CONTRACT.md section 3.3 ({', '.join(EVENT_ROLES)})",
            )
            continue
        if role not in roles:
            report(
                name,
                lineno,
                f"event {event!r} is written by the "
                f"{' and '.join(sorted(roles))} only, not by a {role}",
            )
        if event in _PER_PLAYER_EVENTS and player == "":
            report(name, lineno, f"event {event!r} is about one player: player must not be empty")
        if event == "probes":
            _check_probes_detail(name, lineno, value, detail, report)


def _check_probes_detail(name: str, lineno: int, value: str, detail: str, report: Report) -> None:
    if not _UINT_RE.fullmatch(value):
        report(
            name,
            lineno,
            f"probes value {value!r} is not the number of probes sent (an integer >= 0)",
        )
    kv = dict(w.partition("=")[::2] for w in detail.split())
    if kv.get("kind") not in RTT_KINDS:
        report(name, lineno, f"probes detail {detail!r} lacks kind=net|app|lib")
    for key in _PROBES_COUNTS:
        if not _UINT_RE.fullmatch(kv.get(key, "")):
            report(name, lineno, f"probes detail {detail!r} lacks {key}=<integer >= 0>")


def _check_ticks(path: Path, meta: _Meta | None, report: Report) -> None:
    name = path.name
    lines = _lines(path, TICKS_COLUMNS, report)
    if lines is None:
        return
    window = _Window(meta, path)
    checks = [
        ("t_unix_ns", _UINT_RE, "a positive integer (ns since the Unix epoch)", False),
        ("tick", _UINT_RE, "an integer >= 0", False),
        ("tick_late_us", _UDEC_RE, "a decimal number >= 0 (microseconds)", False),
        ("tick_duration_us", _UDEC_RE, "a decimal number >= 0 (microseconds)", False),
    ] + [(column, _UINT_RE, "an integer >= 0", False) for column in TICKS_COLUMNS[4:]]
    prev_tick: tuple[int, int] | None = None  # (tick, line)
    for lineno, line in enumerate(lines, start=2):
        m = _TICKS_ROW_RE.fullmatch(line)
        if m is None:
            fields = line.split(",")
            if len(fields) != len(TICKS_COLUMNS):
                report(name, lineno, _wrong_field_count(fields, TICKS_COLUMNS))
                continue
            for p in _field_problems(fields, checks):
                report(name, lineno, p)
            t_text, tick_text = fields[0], fields[1]
        else:
            t_text, tick_text = m.group(1), m.group(2)
        if _UINT_RE.fullmatch(t_text) and (problem := window.problem(int(t_text))):
            report(name, lineno, problem)
        if _UINT_RE.fullmatch(tick_text):
            tick = int(tick_text)
            if prev_tick is not None and tick <= prev_tick[0]:
                report(
                    name,
                    lineno,
                    f"tick {tick} does not follow tick {prev_tick[0]} of line "
                    f"{prev_tick[1]}: one row per tick, in order",
                )
            prev_tick = (tick, lineno)
