"""The meta.json of each process (CONTRACT.md section 3.1): its keys and their form, and with a
manifest the library versions the process recorded.

check_meta also returns what the row checks of the process's other files need (Meta): its role,
lifetime, players and host.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prototypes.contract.checklogs.rows import Report, Window
from prototypes.contract.columns import (
    LOG_FILE_RE,
    META_KEYS_ALWAYS,
    META_KEYS_ON_EXIT,
    META_STATUSES,
    SCHEMA_VERSION,
)

if TYPE_CHECKING:
    from prototypes.contract.manifest import Manifest

EXIT_CODES = range(0, 7)  # CONTRACT.md section 2

# effective_channels values: the channel that carried it, then an optional note in parentheses.
_CARRIER_RE = re.compile(r"(reliable|unreliable)(?: \(.*\))?")
LOGICAL_CHANNELS = ("reliable", "unreliable")


@dataclass(frozen=True, slots=True)
class Meta:
    """What the row checks need from a process's meta.json."""

    role: str
    start_unix_ns: int | None
    end_unix_ns: int | None
    first_player: int | None
    players: int | None
    host: str | None = None
    # What the process played and how it ended, for the checks that depend on the workload
    # (positions, pingpong) or on a complete log (tick counters against the echoes).
    workload: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    finished: bool = False


# How far a process's start or end may lie from when its meta.json was written: a run is
# bounded by the schemas' 86,400 s window plus its set-up; a unit mix-up is decades off.
MAX_CLOCK_SKEW_NS = 7 * 86400 * 10**9


def lifetime_window(meta: Meta | None, path: Path) -> Window:
    """The t_unix_ns range the rows of path may have: its process's lifetime (unbounded
    without a readable meta.json)."""
    if meta is None:
        return Window(None, None, path)
    return Window(meta.start_unix_ns, meta.end_unix_ns, path)


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


def check_meta(path: Path, proc: str, role: str, report: Report) -> Meta | None:
    """Check one process's meta.json; what the row checks need from it, None if unreadable."""
    meta = _read_meta(path, report)
    if meta is None:
        return None
    _check_keys(path.name, meta, role, report)
    start, end = _lifetime(path, meta, report)
    first_player, players = _client_players(path.name, meta, proc, role, report)
    host = meta.get("host") if isinstance(meta.get("host"), str) and meta["host"] else None
    workload = meta.get("workload") if isinstance(meta.get("workload"), str) else None
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    finished = meta.get("status") == "exited" and meta.get("exit_code") == 0
    return Meta(
        role,
        start,
        end,
        first_player,
        players,
        host,
        workload,
        {str(k): str(v) for k, v in params.items()},
        finished,
    )


def _read_meta(path: Path, report: Report) -> dict[str, Any] | None:
    """The file as a JSON object, or None after reporting why it is not one."""
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
    return meta


def _check_keys(name: str, meta: dict[str, Any], role: str, report: Report) -> None:
    """Every key of CONTRACT.md 3.1 present and of its form."""
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


def _lifetime(path: Path, meta: dict[str, Any], report: Report) -> tuple[int | None, int | None]:
    """(start, end) of the process in ns, None where absent, not ns, or end before start."""
    name = path.name
    start = meta.get("start_unix_ns") if _is_int(meta.get("start_unix_ns")) else None
    end = meta.get("end_unix_ns") if _is_int(meta.get("end_unix_ns")) else None
    # Nanoseconds, not micro- or milliseconds: rows and meta written consistently in µs agree
    # with each other, and only the clock they were written by shows the unit (every row then
    # falls outside the harness's measurement window: an ok run without data).
    written_ns = path.stat().st_mtime_ns
    for key, value in (("start_unix_ns", start), ("end_unix_ns", end)):
        if value is not None and value > 0 and abs(written_ns - value) > MAX_CLOCK_SKEW_NS:
            years = (written_ns - value) / 1e9 / 86400 / 365.25
            report(
                name,
                0,
                f"key {key!r} is {value}, {years:.1f} years from when the file was written: "
                "expected nanoseconds since the Unix epoch (a value in µs or ms is 1,000 or "
                "1,000,000 times too small)",
            )
            start = end = None  # the rows cannot be placed in the process's lifetime
    if "end_unix_ns" in meta and not (end is not None and (start is None or end >= start)):
        report(
            name,
            0,
            f"key 'end_unix_ns' is {json.dumps(meta['end_unix_ns'])}, expected an integer >= "
            "start_unix_ns (ns since the Unix epoch)",
        )
    if end is not None and start is not None and end < start:
        end = None
    return start, end


def _client_players(
    name: str, meta: dict[str, Any], proc: str, role: str, report: Report
) -> tuple[int | None, int | None]:
    """(first player, players) of a client from its args; the file must be named for it."""
    args = meta.get("args")
    if role != "client" or not isinstance(args, list):
        return None, None
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
    return first_player, players


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


def _process_metas(log_dir: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every <proc>.meta.json of log_dir that reads as a JSON object (check_log_dir names the
    files that do not)."""
    for path in sorted(log_dir.glob("*.meta.json")):
        if LOG_FILE_RE.fullmatch(path.name) is None:
            continue
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(meta, dict):
            yield path, meta


def report_library_versions(log_dir: Path, manifest: Manifest, report: Report) -> None:
    """Report the library_versions of each process's meta.json against the manifest's (CONTRACT.md
    3.1; prototype.schema.json): it holds every name the manifest declares, each with the
    declared version, except the library of another transport than its own (a build without
    libenet, where libenet cannot be installed, still runs tcp). It once required only the
    library of the process's own transport, found from the first word of the manifest's
    `library`, so a process recording `{}` under a manifest whose library was "Python ..." (no
    such name) passed."""
    for path, meta in _process_metas(log_dir):
        recorded = meta.get("library_versions")
        if not isinstance(recorded, dict):
            continue
        others = _other_transport_libraries(manifest, meta.get("transport"))
        for name, declared in manifest.library_versions.items():
            got = recorded.get(name)
            if got is None and name in others:
                continue
            if got is None:
                message = (
                    f"library_versions lacks {name}, which the manifest {manifest.path} "
                    f"declares as {declared!r}; every process records every library and "
                    "toolchain the manifest names (but other transports' libraries), with the "
                    "version it runs with"
                )
            elif got != declared:
                message = (
                    f"library_versions says {name} {got!r} but the manifest {manifest.path} "
                    f"says {declared!r}: the process ran with another version than declared"
                )
            else:
                continue
            report(path.name, 0, message)


def _other_transport_libraries(manifest: Manifest, transport: object) -> set[str]:
    """The library_versions names that are the library of another transport than this one (a
    transport's `library` without the words after the name: "libenet (Debian 12 libenet-dev)"
    is libenet), and not this transport's own."""
    first = {t.name: (t.library or "").split(" ", 1)[0] for t in manifest.transports}
    own = first.get(transport) if isinstance(transport, str) else None
    return {lib for name, lib in first.items() if name != transport and lib and lib != own}


def report_transport_settings(log_dir: Path, manifest: Manifest, report: Report) -> None:
    """Report the transport_settings of each process's meta.json against the manifest's
    settings of its transport (CONTRACT.md 3.1): every declared setting recorded, nothing
    recorded that is not declared, and each value the declared one unless the process was
    given the option that changes it."""
    for path, meta in _process_metas(log_dir):
        transport = meta.get("transport")
        if not isinstance(transport, str) or transport not in manifest.transport_names:
            continue
        declared = manifest.transport(transport).settings
        recorded = meta.get("transport_settings")
        if not declared and recorded is None:
            continue
        where = f"the manifest {manifest.path} (transports {transport} settings)"
        if not isinstance(recorded, dict) or not all(isinstance(v, str) for v in recorded.values()):
            report(
                path.name,
                0,
                f"key 'transport_settings' is {json.dumps(recorded)}, expected an object of "
                f"setting name -> value string holding every setting of {where}",
            )
            continue
        given = meta.get("transport_options")
        given = given if isinstance(given, dict) else {}
        for name, setting in declared.items():
            got = recorded.get(name)
            if got is None:
                report(path.name, 0, f"transport_settings lacks {name}, which {where} declares")
            elif got != setting.value and (setting.option is None or setting.option not in given):
                report(
                    path.name,
                    0,
                    f"transport_settings says {name} {got!r} but {where} says {setting.value!r} "
                    "and the process was given no option that changes it",
                )
        for name in sorted(set(recorded) - set(declared)):
            report(path.name, 0, f"transport_settings holds {name}, which {where} does not declare")


def report_message_limits(log_dir: Path, manifest: Manifest, report: Report) -> None:
    """Report the message_limits each process recorded against its transport's in the manifest
    (CONTRACT.md section 5): equal where the manifest declares them, at least the contract's
    1 MiB on both channels where it does not; not judged where the process was given transport
    options (they may change what the library carries) or recorded none."""
    for path, meta in _process_metas(log_dir):
        transport = meta.get("transport")
        recorded = meta.get("message_limits")
        if (
            recorded is None
            or meta.get("transport_options")
            or not isinstance(transport, str)
            or transport not in manifest.transport_names
        ):
            continue
        declared = manifest.transport(transport).message_limits
        keys = ("reliable_bytes", "unreliable_bytes")
        if not isinstance(recorded, dict) or not all(_is_int(recorded.get(k)) for k in keys):
            report(
                path.name,
                0,
                f"key 'message_limits' is {json.dumps(recorded)}, expected an object of "
                "reliable_bytes and unreliable_bytes (integers)",
            )
            continue
        where = f"the manifest {manifest.path} (transports {transport} message_limits)"
        wanted = (declared.reliable_bytes, declared.unreliable_bytes)
        for key, want in zip(keys, wanted, strict=True):
            got = recorded[key]
            if not declared.declared and got < want:
                report(
                    path.name,
                    0,
                    f"message_limits says {key} {got}, less than the contract's {want}; "
                    f"declare it in {where}",
                )
            elif declared.declared and got != want:
                report(path.name, 0, f"message_limits says {key} {got} but {where} says {want}")
