"""The log schema of prototypes/CONTRACT.md section 3, as data (schema version 1).

Both the log checker (checklogs/) and the readers (logs.py) take their
column names from here, so a schema change is made in one place.
"""

from __future__ import annotations

import re

SCHEMA_VERSION = 1

RTT_COLUMNS = ("t_unix_ns", "player", "seq", "rtt_us", "kind", "send_late_us")
EVENTS_COLUMNS = ("t_unix_ns", "player", "event", "value", "detail")
TICKS_COLUMNS = (
    "t_unix_ns",
    "tick",
    "tick_late_us",
    "tick_duration_us",
    "players_connected",
    "networked_objects",
    "msgs_in",
    "msgs_out",
    "bytes_in",
    "bytes_out",
)

RTT_KINDS = ("net", "app", "lib")

# Event name -> roles that may write it (CONTRACT.md 3.3, column "who").
EVENT_ROLES: dict[str, frozenset[str]] = {
    "listen": frozenset({"server"}),
    "connect": frozenset({"client"}),
    "connect_failed": frozenset({"client"}),
    "join": frozenset({"server"}),
    "spawn": frozenset({"client"}),
    "world_loaded": frozenset({"client"}),
    "block_place": frozenset({"client"}),
    "block_remove": frozenset({"client"}),
    "block_ack": frozenset({"client"}),
    "envmod_step": frozenset({"server"}),
    "probes": frozenset({"client"}),
    "disconnect": frozenset({"server", "client"}),
    "server_lost": frozenset({"client"}),
    "malformed": frozenset({"server", "client"}),
    "error": frozenset({"server", "client"}),
}

# Log kind (file suffix) -> columns, and which roles write it.
CSV_KINDS: dict[str, tuple[str, ...]] = {
    "rtt": RTT_COLUMNS,
    "events": EVENTS_COLUMNS,
    "ticks": TICKS_COLUMNS,
}
FILES_BY_ROLE: dict[str, tuple[str, ...]] = {
    "server": ("meta.json", "events.csv", "ticks.csv"),
    "client": ("meta.json", "rtt.csv", "events.csv"),
}

META_KEYS_ALWAYS = (
    "schema",
    "role",
    "prototype",
    "transport",
    "library_versions",
    "args",
    "workload",
    "params",
    "transport_options",
    "effective_channels",
    "run_id",
    "seed",
    "pid",
    "host",
    "start_unix_ns",
    "status",
)
META_KEYS_ON_EXIT = ("end_unix_ns", "exit_code", "exit_reason")
META_STATUSES = ("running", "exited")

# <proc>.<kind>: proc is "server" or "client-<first player>".
LOG_FILE_RE = re.compile(
    r"(?P<proc>server|client-(?P<first>[0-9]+))\.(?P<suffix>meta\.json|rtt\.csv|events\.csv|ticks\.csv)"
)
