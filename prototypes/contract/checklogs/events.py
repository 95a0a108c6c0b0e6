"""A process's events.csv (CONTRACT.md section 3.3): known event names written by the right
role, once per player where the contract says so, probes counts that add up, spawn and block
positions where the game puts them (positions.py), and on the server no two players joining from
one remote address at once (players sharing a socket).
"""

from __future__ import annotations

import re
from pathlib import Path

from prototypes.contract.checklogs.meta import Meta, lifetime_window
from prototypes.contract.checklogs.positions import Positions
from prototypes.contract.checklogs.rows import (
    DEC,
    DEC_RE,
    UINT,
    UINT_RE,
    FieldCheck,
    Report,
    data_lines,
    field_problems,
    wrong_field_count,
)
from prototypes.contract.columns import EVENT_ROLES, EVENTS_COLUMNS
from prototypes.contract.logs import parse_detail

_EVENTS_ROW_RE = re.compile(rf"({UINT}),({UINT})?,([a-z_]+),(?:{DEC})?,([^,]*)")
# Events that are about one player and so must name it.
_PER_PLAYER_EVENTS = frozenset({"connect", "world_loaded", "probes"})
# Events a player logs at most once (CONTRACT.md 3.3).
_ONCE_PER_PLAYER_EVENTS = ("connect", "spawn", "world_loaded")
_POSITION_EVENTS = frozenset({"spawn", "block_place", "block_remove"})
_PROBES_COUNTS = ("echoed", "lost", "inflight")
_PROBED_KINDS = ("net", "app")

_EVENTS_FIELD_CHECKS: tuple[FieldCheck, ...] = (
    ("t_unix_ns", UINT_RE, "a positive integer (ns since the Unix epoch)", False),
    ("player", UINT_RE, "an integer >= 0 or empty", True),
    ("event", None, "", False),  # unknown names are reported against the table below
    ("value", DEC_RE, "a number or empty", True),
    ("detail", None, "", True),
)


def check_events(path: Path, role: str, meta: Meta | None, report: Report) -> None:
    """Check the events.csv of a process of this role ("server" or "client")."""
    name = path.name
    lines = data_lines(path, EVENTS_COLUMNS, report)
    if lines is None:
        return
    window = lifetime_window(meta, path)
    positions = Positions(name, meta.workload if meta else None, report)
    # (event, player[, kind]) -> first line, for the events a player logs at most once.
    once: dict[tuple[str, ...], int] = {}
    # remote address -> (player, line) of the players connected from it (server only).
    remotes: dict[str, tuple[str, int]] = {}
    for lineno, line in enumerate(lines, start=2):
        m = _EVENTS_ROW_RE.fullmatch(line)
        fields = line.split(",")
        if m is None:
            if len(fields) != len(EVENTS_COLUMNS):
                report(name, lineno, wrong_field_count(fields, EVENTS_COLUMNS))
                continue
            for p in field_problems(fields, _EVENTS_FIELD_CHECKS):
                report(name, lineno, p)
        t_text, player, event, value, detail = fields
        if UINT_RE.fullmatch(t_text) and (problem := window.problem(int(t_text))):
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
        if role == "client" and event in _POSITION_EVENTS and UINT_RE.fullmatch(player):
            positions.event(lineno, int(player), event, detail)
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
    sent = int(value) if UINT_RE.fullmatch(value) else None
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
        if UINT_RE.fullmatch(kv.get(key, "")):
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
