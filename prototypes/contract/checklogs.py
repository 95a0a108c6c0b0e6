"""Conformance checker for the logs of prototypes/CONTRACT.md section 3 (schema version 1).

check_log_dir(dir) returns every Violation(file, line, message) it finds, in plain words: file
names, headers (exact columns, in order), each row's types and units, event names and who may
write them, meta.json keys and their form, per-(player, kind) uniqueness of probe sequence
numbers, and what no conformant prototype can log:

- an rtt_us of kind net or app below RTT_FLOOR_US (an RTT written in ms instead of µs);
- app probes answered between the server's ticks (echoed from the receive path), where the
  server and the client ran on one host and so share a clock (CONTRACT.md section 3.2);
- two players joining from one remote address at once (players sharing a socket);
- with a manifest: a library whose version in a process's meta.json differs from the manifest.

Rows are written in echo order, so on unreliable channels seq may legitimately arrive out of
order: only duplicates are violations.

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
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

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
from prototypes.contract.logs import parse_detail

if TYPE_CHECKING:
    from prototypes.contract.manifest import Manifest

__all__ = ["RTT_FLOOR_US", "Violation", "check_library_versions", "check_log_dir"]

WINDOW_SLACK_NS = 5 * 10**9
DEFAULT_MAX_PER_FILE = 50
EXIT_CODES = range(0, 7)  # CONTRACT.md section 2

# The smallest rtt_us a measured probe (kinds net and app) may have. A round trip crosses the
# kernel's network stack twice and wakes a process on each side; the reference prototype's
# smallest round trips on a 2-core VM were 13.7-17.0 µs on loopback and 11.6-20.4 µs between two
# network namespaces over a veth pair (tcp, udp, enet; 10 players x 200 probes/s x 5 s each), so
# one floor serves both. 5 µs stays below both by half; an RTT written in ms instead of µs is
# 1000x too small and falls below it whenever the real round trip was under 5 ms.
RTT_FLOOR_US = 5.0
# An app probe must be answered by a tick (CONTRACT.md section 3.2): some server tick must
# overlap the window from its send to its echo. The slack covers clock reads around the writes;
# it is far below a tick period (16.7 ms at 60 Hz), so an echo from the receive path on one host
# (a window of ~0.1 ms) still misses every tick most of the time.
APP_TICK_SLACK_NS = 1_000_000
# A client is flagged when at least this many of its app probes, and more than this share of
# those checked, overlap no tick: a conformant prototype has none, one that echoes app probes in
# its receive path most (the share varies with each player's phase against the tick grid).
APP_OFF_TICK_MIN = 10
APP_OFF_TICK_SHARE = 0.1
# effective_channels values: the channel that carried it, then an optional note in parentheses.
_CARRIER_RE = re.compile(r"(reliable|unreliable)(?: \(.*\))?")
LOGICAL_CHANNELS = ("reliable", "unreliable")

_UINT = r"[0-9]+"
_UDEC = r"[0-9]+(?:\.[0-9]+)?"
_DEC = r"-?[0-9]+(?:\.[0-9]+)?"
_UINT_RE = re.compile(_UINT)
_UDEC_RE = re.compile(_UDEC)
_DEC_RE = re.compile(_DEC)
# send_late_us is never negative: a send never fires before its schedule (CONTRACT.md 3.2).
_RTT_ROW_RE = re.compile(rf"({_UINT}),({_UINT}),({_UINT}),({_UDEC}),(net|app|lib),({_UDEC})?")
_EVENTS_ROW_RE = re.compile(rf"({_UINT}),({_UINT})?,([a-z_]+),(?:{_DEC})?,([^,]*)")
# tick_late_us and tick_duration_us are µs like every _us column: decimals (the reference
# prototype writes three decimals); the counters are integers.
_TICKS_ROW_RE = re.compile(rf"({_UINT}),({_UINT}),{_UDEC},({_UDEC})(?:,{_UINT}){{6}}")
_KIND_CODE = {k: i for i, k in enumerate(RTT_KINDS)}
# Events that are about one player and so must name it.
_PER_PLAYER_EVENTS = frozenset({"connect", "world_loaded", "probes"})
# Events a player logs at most once (CONTRACT.md 3.3).
_ONCE_PER_PLAYER_EVENTS = ("connect", "spawn", "world_loaded")
_PROBES_COUNTS = ("echoed", "lost", "inflight")
_PROBED_KINDS = ("net", "app")


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
    host: str | None = None


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


@dataclass(slots=True)
class _AppProbes:
    """The app rows of one rtt.csv: send time (ns), round trip (ns) and line, for the tick check."""

    t_unix_ns: array[int]
    rtt_ns: array[int]
    line: array[int]


def check_log_dir(
    log_dir: Path | str,
    max_per_file: int = DEFAULT_MAX_PER_FILE,
    manifest: Manifest | None = None,
) -> list[Violation]:
    """Check a run's log directory against CONTRACT.md section 3; [] means it conforms.

    manifest: the prototype's manifest, to compare the library versions its processes recorded
    with those it declares (check_library_versions).
    """
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

    metas: dict[str, _Meta] = {}
    app_probes: dict[str, _AppProbes] = {}
    ticks: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None
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
        if meta is not None:
            metas[proc] = meta
        if "rtt.csv" in suffixes and role == "client":
            app_probes[proc] = _check_rtt(log_dir / f"{proc}.rtt.csv", meta, report)
        if "events.csv" in suffixes:
            _check_events(log_dir / f"{proc}.events.csv", role, meta, report)
        if "ticks.csv" in suffixes and role == "server":
            ticks = _check_ticks(log_dir / f"{proc}.ticks.csv", meta, report)
    if ticks is not None:
        _check_app_ticks(ticks, metas, app_probes, report)
    if manifest is not None:
        for v in check_library_versions(log_dir, manifest):
            report(v.file, v.line, v.message)
    return report.finish()


def check_library_versions(log_dir: Path | str, manifest: Manifest) -> list[Violation]:
    """The library_versions of each process's meta.json against the manifest's (CONTRACT.md
    3.1; prototype.schema.json): every library a process records has the version the manifest
    declares, and the library of the process's own transport is recorded."""
    out = []
    for path in sorted(Path(log_dir).glob("*.meta.json")):
        if LOG_FILE_RE.fullmatch(path.name) is None:
            continue
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
            recorded = meta.get("library_versions")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
            continue  # check_log_dir names unreadable files
        if not isinstance(recorded, dict):
            continue
        needed = _transport_library(manifest, meta.get("transport"))
        for name, declared in manifest.library_versions.items():
            got = recorded.get(name)
            if got is None and name != needed:
                # A library the process's transport does not use may be absent (a build
                # without the enet transport on a machine without libenet); a different
                # version of any library is always a violation.
                continue
            if got is None:
                message = (
                    f"library_versions lacks {name}, which the manifest {manifest.path} "
                    f"declares as {declared!r}; every process records the versions it runs with"
                )
            elif got != declared:
                message = (
                    f"library_versions says {name} {got!r} but the manifest {manifest.path} "
                    f"says {declared!r}: the process ran with another version than declared"
                )
            else:
                continue
            out.append(Violation(path.name, 0, message))
    return out


def _transport_library(manifest: Manifest, transport: object) -> str | None:
    """The library_versions name of the library a transport uses (its manifest `library`
    without the words after the name: "libenet (Debian 12 libenet-dev)" is libenet)."""
    if not isinstance(transport, str) or transport not in manifest.transport_names:
        return None
    library = manifest.transport(transport).library or ""
    return library.split(" ", 1)[0] or None


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
    for key in ("prototype", "transport", "workload", "run_id", "exit_reason"):
        want(key, isinstance(meta.get(key), str), "a string")
    want(
        "host",
        isinstance(meta.get("host"), str) and meta["host"] != "",
        "the name of the machine the process ran on (a non-empty string)",
    )
    want(
        "library_versions",
        isinstance(meta.get("library_versions"), dict)
        and all(isinstance(v, str) for v in meta["library_versions"].values()),
        "an object of library name -> version string",
    )
    args_ok = (
        isinstance(meta.get("args"), list)
        and len(meta["args"]) > 0
        and all(isinstance(a, str) for a in meta["args"])
    )
    want("args", args_ok, "a non-empty list of strings (the program first, then its arguments)")
    if args_ok:
        _check_args(name, meta["args"], role, report)
    for key in ("params", "transport_options"):
        want(key, isinstance(meta.get(key), dict), "an object")
    channels = meta.get("effective_channels")
    want(
        "effective_channels",
        isinstance(channels, dict)
        and sorted(channels) == sorted(LOGICAL_CHANNELS)
        and all(isinstance(v, str) and _CARRIER_RE.fullmatch(v) for v in channels.values()),
        'an object with the keys "reliable" and "unreliable", each naming the channel that '
        'carried it ("reliable" or "unreliable", optionally followed by " (a note)")',
    )
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
    host = meta.get("host") if isinstance(meta.get("host"), str) and meta["host"] else None
    return _Meta(role, start, end, first_player, players, host)


def _check_args(name: str, args: list[str], role: str, report: Report) -> None:
    """args is the command line as received: the program, then the flags (CONTRACT.md 3.1)."""
    if args[0].startswith("-"):
        report(
            name,
            0,
            f"args begins with {args[0]!r}: the first element is the program (argv[0]), "
            "then the arguments as received",
        )
    said = _flag_value(args, "-role") or _flag_value(args, "--role")
    if said != role:
        report(
            name,
            0,
            f"args hold {'-role ' + said if said else 'no -role'}, but this is the {role}'s "
            "meta.json: args are the process's own command line",
        )


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
    (
        "send_late_us",
        _UDEC_RE,
        "a decimal number >= 0 (microseconds; a send never fires before its schedule) or empty",
        True,
    ),
)


def _below_floor(rtt_text: str) -> bool:
    """rtt_us (a _UDEC) < RTT_FLOOR_US, read from the text: most rows are far above it."""
    return (len(rtt_text) == 1 or rtt_text[1] == ".") and float(rtt_text) < RTT_FLOOR_US


def _check_rtt(path: Path, meta: _Meta | None, report: Report) -> _AppProbes:
    name = path.name
    app = _AppProbes(array("q"), array("q"), array("q"))
    lines = _lines(path, RTT_COLUMNS, report)
    if lines is None:
        return app
    window = _Window(meta, path)
    lo = window.lo if window.lo is not None else 1
    hi = window.hi if window.hi is not None else 1 << 63
    p_lo = p_hi = None
    if meta is not None and meta.first_player is not None and meta.players is not None:
        p_lo, p_hi = meta.first_player, meta.first_player + meta.players - 1
    # (player, kind, seq, line) of every row, for the duplicate check at the end.
    keys = array("q")
    # kind -> [rows below RTT_FLOOR_US, first such line, its rtt_us]
    too_fast: dict[str, list[Any]] = {}
    match = _RTT_ROW_RE.fullmatch
    for lineno, line in enumerate(lines, start=2):
        m = match(line)
        if m is not None:
            t_text, player_text, seq_text, rtt_text, kind, late = m.groups()
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
            t_text, player_text, seq_text, rtt_text, kind, late = fields
            if _UINT_RE.fullmatch(t_text) and (problem := window.problem(int(t_text))):
                report(name, lineno, problem)
            if not (
                _UINT_RE.fullmatch(player_text)
                and _UINT_RE.fullmatch(seq_text)
                and kind in _KIND_CODE
            ):
                continue
            if not (_UINT_RE.fullmatch(t_text) and _UDEC_RE.fullmatch(rtt_text)):
                rtt_text = ""  # nothing more to learn from this row's times
        player = int(player_text)
        if p_lo is not None and p_hi is not None and not p_lo <= player <= p_hi:
            report(
                name,
                lineno,
                f"player {player} is not one of this client's players "
                f"{p_lo}..{p_hi} (from -first-player and -players in meta.json)",
            )
        if kind == "lib":
            if late:
                report(name, lineno, f"send_late_us is {late!r} but must be empty for kind lib")
        elif rtt_text:
            if _below_floor(rtt_text):
                entry = too_fast.setdefault(kind, [0, lineno, rtt_text])
                entry[0] += 1
            if kind == "app":
                app.t_unix_ns.append(int(t_text))
                app.rtt_ns.append(round(float(rtt_text) * 1000))
                app.line.append(lineno)
        keys.extend((player, _KIND_CODE[kind], int(seq_text), lineno))
    _report_duplicate_seqs(name, keys, report)
    for kind, (count, first_line, value) in too_fast.items():
        report(
            name,
            first_line,
            f"{count} rtt_us value(s) of kind {kind} below RTT_FLOOR_US = {RTT_FLOOR_US:g} µs, "
            f"the first here ({value}): no round trip through the kernel is that fast; "
            "rtt_us is in microseconds (were they written in ms?)",
        )
    return app


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
    # (event, player[, kind]) -> first line, for the events a player logs at most once.
    once: dict[tuple[str, ...], int] = {}
    # remote address -> (player, line) of the players connected from it (server only).
    remotes: dict[str, tuple[str, int]] = {}
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
        key: tuple[str, ...] | None = None
        if event == "probes":
            kind = _check_probes_detail(name, lineno, value, detail, report)
            key = (event, player, kind) if kind else None
        elif event in _ONCE_PER_PLAYER_EVENTS:
            key = (event, player)
        if key is not None and player != "":
            if key in once:
                what = f"kind {key[2]} " if len(key) > 2 else ""
                report(
                    name,
                    lineno,
                    f"event {event!r} of player {player} {what}repeats line {once[key]}: "
                    "a player logs it once",
                )
            else:
                once[key] = lineno
        if role == "server" and event in ("join", "disconnect"):
            _check_remote(name, lineno, event, player, detail, remotes, report)


def _check_remote(
    name: str,
    lineno: int,
    event: str,
    player: str,
    detail: str,
    remotes: dict[str, tuple[str, int]],
    report: Report,
) -> None:
    """Each player has its own connection, so no two connected players share a remote address
    (players multiplexed over one socket would): CONTRACT.md, Words."""
    if event == "disconnect":
        for remote, (who, _) in list(remotes.items()):
            if who == player:
                del remotes[remote]
        return
    remote = parse_detail(detail).get("remote")
    if not remote:
        return
    other = remotes.get(remote)
    if other is not None and other[0] != player:
        report(
            name,
            lineno,
            f"player {player} joined from remote={remote}, the address of player {other[0]} "
            f"(line {other[1]}), still connected: every player has its own connection and "
            "socket",
        )
    remotes[remote] = (player, lineno)


def _check_probes_detail(
    name: str, lineno: int, value: str, detail: str, report: Report
) -> str | None:
    """Problems of one probes event; its kind when the detail names a probed kind."""
    sent = int(value) if _UINT_RE.fullmatch(value) else None
    if sent is None or sent == 0:
        report(
            name,
            lineno,
            f"probes value {value!r} is not the number of probes sent (an integer >= 1: no "
            "probes event is written for a kind the player never sent)",
        )
    kv = parse_detail(detail)
    kind = kv.get("kind")
    if kind not in _PROBED_KINDS:
        report(
            name,
            lineno,
            f"probes detail {detail!r} lacks kind=net|app (lib is read, not probed)",
        )
        kind = None
    counts = []
    for key in _PROBES_COUNTS:
        if _UINT_RE.fullmatch(kv.get(key, "")):
            counts.append(int(kv[key]))
        else:
            report(name, lineno, f"probes detail {detail!r} lacks {key}=<integer >= 0>")
    if sent is not None and len(counts) == len(_PROBES_COUNTS) and sum(counts) != sent:
        report(
            name,
            lineno,
            f"probes detail {detail!r}: echoed + lost + inflight = {sum(counts)}, but the "
            f"value says {sent} probes were sent; every probe sent is one of the three",
        )
    return kind


def _check_ticks(
    path: Path, meta: _Meta | None, report: Report
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Row checks of server.ticks.csv; returns every good row's t_unix_ns and tick duration in ns
    (for _check_app_ticks)."""
    name = path.name
    times, durations = array("q"), array("q")
    lines = _lines(path, TICKS_COLUMNS, report)
    if lines is None:
        return np.empty(0, np.int64), np.empty(0, np.int64)
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
            t_text, tick_text, dur_text = m.group(1), m.group(2), m.group(3)
            times.append(int(t_text))
            durations.append(round(float(dur_text) * 1000))
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
    return np.frombuffer(times, dtype=np.int64), np.frombuffer(durations, dtype=np.int64)


def _check_app_ticks(
    ticks: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
    metas: dict[str, _Meta],
    app_probes: dict[str, _AppProbes],
    report: Report,
) -> None:
    """app probes are echoed by a server tick (CONTRACT.md 3.2): the window from a probe's send
    (t_unix_ns) to its echo (t_unix_ns + rtt_us) must overlap a tick, which spans its row's
    t_unix_ns -/+ tick_duration_us (either side: a prototype may stamp the row at the tick's
    start or end), plus APP_TICK_SLACK_NS. Only where the server and the client ran on one
    host (meta.json host), so that both read one clock, and only for probes answered within
    the ticks logged (a killed server's last rows may be missing)."""
    server = metas.get("server")
    t, dur = ticks
    if server is None or server.host is None or t.size == 0:
        return
    order = np.argsort(t, kind="stable")
    t, dur = t[order], dur[order]
    # Ticks never overlap, so a window that overlaps one overlaps one of the two ticks around
    # its start or the first two after it.
    for proc, probes in sorted(app_probes.items()):
        meta = metas.get(proc)
        if meta is None or meta.host != server.host or not probes.t_unix_ns:
            continue
        sent = np.frombuffer(probes.t_unix_ns, dtype=np.int64)
        echoed = sent + np.frombuffer(probes.rtt_ns, dtype=np.int64)
        checked = (sent >= t[0] - dur[0]) & (echoed <= t[-1])
        if not checked.any():
            continue
        lo, hi = sent - APP_TICK_SLACK_NS, echoed + APP_TICK_SLACK_NS
        i = np.searchsorted(t, lo)
        on_tick = np.zeros(sent.shape, dtype=bool)
        for k in (-2, -1, 0, 1):
            j = np.clip(i + k, 0, t.size - 1)
            on_tick |= (t[j] - dur[j] <= hi) & (t[j] + dur[j] >= lo)
        off = checked & ~on_tick
        n_off, n_checked = int(np.count_nonzero(off)), int(np.count_nonzero(checked))
        if n_off >= APP_OFF_TICK_MIN and n_off > APP_OFF_TICK_SHARE * n_checked:
            first = int(np.flatnonzero(off)[0])
            line = int(probes.line[first])
            report(
                f"{proc}.rtt.csv",
                line,
                f"{n_off} of {n_checked} app probes were answered between the server's ticks "
                f"(server.ticks.csv), the first here: sent at {int(sent[first])}, echoed "
                f"{(int(echoed[first]) - int(sent[first])) / 1e3:.1f} µs later, with no tick "
                f"within {APP_TICK_SLACK_NS / 1e6:g} ms of that window; app probes are echoed "
                "in the server's next tick, not in its receive path (CONTRACT.md 3.2)",
            )
