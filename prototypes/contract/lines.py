"""The NETSTICK lines of prototypes/CONTRACT.md section 2: the grammar, the parser and the writer.

    NETSTICK READY role=server transport=<name> addr=<host:port> pid=<pid> schema=1
    NETSTICK CONNECTED players=<n> first=<k> connect_s=<seconds>

The harness waits for them, the conformance checker holds prototypes to their exact form, and
Python prototypes (the test suite's stand-in) print them: all three take them from here.
"""

from __future__ import annotations

import re

from prototypes.contract.logs import parse_detail

PREFIX = "NETSTICK "
READY_PREFIX = "NETSTICK READY"
CONNECTED_PREFIX = "NETSTICK CONNECTED"

READY_FORMAT = "NETSTICK READY role=server transport=<name> addr=<host:port> pid=<pid> schema=1"
CONNECTED_FORMAT = "NETSTICK CONNECTED players=<n> first=<k> connect_s=<seconds>"

READY_RE = re.compile(
    r"NETSTICK READY role=(?P<role>\S+) transport=(?P<transport>\S+) "
    r"addr=(?P<host>\S+):(?P<port>[0-9]+) pid=(?P<pid>[0-9]+) schema=(?P<schema>[0-9]+)"
)
CONNECTED_RE = re.compile(
    r"NETSTICK CONNECTED players=(?P<players>[0-9]+) first=(?P<first>[0-9]+) "
    r"connect_s=(?P<connect_s>[0-9]+(?:\.[0-9]+)?)"
)


def fields(line: str) -> dict[str, str]:
    """`NETSTICK READY key=value ...` -> {"key": "value", ...}, leniently (the harness reads
    what it needs; the conformance checker judges the exact form with READY_RE/CONNECTED_RE)."""
    return parse_detail(line.partition(" ")[2].partition(" ")[2])


def ready_line(transport: str, host: str, port: int, pid: int, schema: int = 1) -> str:
    addr = f"{host}:{port}"
    return f"{READY_PREFIX} role=server transport={transport} addr={addr} pid={pid} schema={schema}"


def connected_line(players: int, first: int, connect_s: float) -> str:
    return f"{CONNECTED_PREFIX} players={players} first={first} connect_s={connect_s:.4f}"
