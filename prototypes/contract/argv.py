"""The argument lists and environment of a prototype's processes for one cell, rendered from its
manifest's command templates (prototypes/CONTRACT.md section 2).

`server_argv` and `client_argvs` take the cell dict of workflow.harness.cell (or any mapping
with the same keys) and split the players over client processes of at most
`players_per_process` players each; `check_cell` finds what a manifest cannot run before
anything starts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prototypes.contract import workloads
from prototypes.contract.manifest import PINNED
from prototypes.contract.templates import arg_text, render

if TYPE_CHECKING:
    from prototypes.contract.manifest import Manifest

# An extra flag: -name or --name, its value after "=" or in the next argument.
_FLAG_RE = re.compile(r"-{1,2}([A-Za-z0-9][A-Za-z0-9-]*)(=.*)?")


def param_args(cell: Mapping[str, Any]) -> list[str]:
    """-param key=value per workload parameter, then -param t.key=value per transport option:
    the variant's (variant_options), then the campaign's."""
    out: list[str] = []
    for key, value in cell.get("params", {}).items():
        out += ["-param", f"{key}={arg_text(value)}"]
    options = {**cell.get("variant_options", {}), **cell.get("transport_options", {})}
    for key, value in options.items():
        out += ["-param", f"t.{key}={arg_text(value)}"]
    return out


def _check_extra(man: Manifest, key: str, extra: Sequence[str], *, benchmark: bool) -> None:
    """Extra flags may only be optional contract flags or prototype flags the manifest declares,
    and, in extra_server_flags of a plan made for a benchmark, its benchmark flags."""
    i = 0
    while i < len(extra):
        m = _FLAG_RE.fullmatch(extra[i])
        if m is not None and m.group(1) in man.benchmark_flags and key == "extra_server_flags":
            if not benchmark:
                raise ValueError(
                    f"{key}: {extra[i]!r} is benchmark-only: it plants a regression (the "
                    "server made slower on purpose, to measure what a benchmark can detect), so "
                    "only a plan made for a benchmark may set it (netstick bench's scratch "
                    f"campaigns; benchmark_flags of {man.path}); remove it from this campaign"
                )
        elif m is None or (
            m.group(1) not in man.optional_flags and m.group(1) not in man.prototype_flags
        ):
            declared = ", ".join(f"-{f}" for f in man.optional_flags) or "none"
            own = ", ".join(f"-{f}" for f in man.prototype_flags) or "none"
            raise ValueError(
                f"{key}: {extra[i]!r} is not an optional flag that {man.path} declares "
                f"(optional_flags: {declared}; prototype_flags: {own})"
            )
        i += 1 if m.group(2) else 2


def _check_cell(man: Manifest, cell: Mapping[str, Any]) -> None:
    if cell["transport"] not in man.transport_names:
        raise ValueError(
            f"cell transport {cell['transport']!r} is not offered by {man.path} "
            f"(transports: {', '.join(man.transport_names)})"
        )
    workload = cell.get("workload", "idle")
    if workload not in man.workloads:
        raise ValueError(
            f"cell workload {workload!r} is not supported by {man.path} "
            f"(workloads: {', '.join(man.workloads)})"
        )


def check_cell(man: Manifest, cell: Mapping[str, Any], *, benchmark: bool = False) -> None:
    """Raise ValueError (naming the key and what the manifest or the contract allows) when a cell
    asks this prototype for a transport, workload or extra flag it does not have, or gives its
    workload a parameter or value the contract does not allow: bad input, found before anything
    runs. A benchmark flag (a planted regression) passes only when benchmark is true: the cell
    is planned for a benchmark."""
    _check_cell(man, cell)
    server, client = cell.get("extra_server_flags", []), cell.get("extra_client_flags", [])
    _check_extra(man, "extra_server_flags", list(server), benchmark=benchmark)
    _check_extra(man, "extra_client_flags", list(client), benchmark=False)
    # The contract's parameters and values: the same for every prototype.
    workloads.check(str(cell.get("workload", "idle")), cell.get("params", {}))
    _check_probe_size(man, cell)


def _check_probe_size(man: Manifest, cell: Mapping[str, Any]) -> None:
    """A stream or pingpong probe is one message and must fit its channel as the transport's
    library (at the cell's version) carries it: the manifest's message_limits."""
    workload = str(cell.get("workload", "idle"))
    # Transport options may change what the library carries (a payload size, an MTU): then
    # the prototype itself refuses a probe that does not fit.
    if workload not in ("stream", "pingpong") or cell.get("transport_options"):
        return
    params = {**workloads.defaults(workload), **dict(cell.get("params", {}))}
    size, channel = int(params["size"]), str(params["channel"])
    transport = man.transport(cell["transport"])
    version = str(cell.get("library_version", PINNED))
    if version != PINNED:
        transport = transport.at_version(version)
    limit = transport.message_limits.on(channel)
    if size > limit:
        raise ValueError(
            f"params.size {size}: transport {transport.name} ({transport.library} "
            f"{transport.version}) carries at most {limit} bytes on its {channel} channel "
            f"({transport.message_limits.source}; {man.path}: message_limits); a probe is one "
            "message and is never split"
        )


def _scalars(cell: Mapping[str, Any], host: str, port: int, log_dir: Path | str) -> dict[str, str]:
    """The one-argument placeholders both roles share."""
    return {
        "transport": str(cell["transport"]),
        "host": host,
        "port": str(port),
        "workload": str(cell.get("workload", "idle")),
        "tick_rate": arg_text(float(cell.get("tick_rate_hz", 60))),
        "log_dir": str(log_dir),
        "run_id": str(cell.get("run_id", "local")),
        "seed": str(cell.get("seed", 1)),
    }


def server_argv(
    man: Manifest,
    cell: Mapping[str, Any],
    *,
    host: str,
    port: int,
    log_dir: Path | str,
    check: bool = True,
) -> list[str]:
    """The server's argument list for one cell.

    cell: the keys of workflow/schemas/cell.schema.json that matter here (transport, workload,
    params, transport_options, tick_rate_hz, run_id, seed, extra_server_flags); the server runs
    until SIGTERM unless cell has server_duration_s. check=False skips the checks of transport,
    workload and extra flags against the manifest (the conformance checker's bad inputs).
    """
    extra = list(cell.get("extra_server_flags", []))
    if check:
        _check_cell(man, cell)
        # Benchmark flags pass: planning refused them unless the plan was made for a benchmark.
        _check_extra(man, "extra_server_flags", extra, benchmark=True)
    scalars = _scalars(cell, host, port, log_dir)
    scalars["duration"] = arg_text(float(cell.get("server_duration_s", 0)))
    lists = {"binary": man.binary_argv(), "params": param_args(cell), "extra": extra}
    return render(man.server_command, scalars, lists)


def client_split(players: int, per_process: int) -> list[tuple[int, int]]:
    """(first_player, players) of each client process: full processes, then the remainder."""
    if players < 1 or per_process < 1:
        raise ValueError(
            f"players ({players}) and players_per_process ({per_process}) must be >= 1"
        )
    n = math.ceil(players / per_process)
    return [(k * per_process, min(per_process, players - k * per_process)) for k in range(n)]


def client_argvs(
    man: Manifest,
    cell: Mapping[str, Any],
    *,
    host: str,
    port: int,
    log_dir: Path | str,
    players_per_process: int | None = None,
    check: bool = True,
) -> list[list[str]]:
    """One argument list per client process: ceil(players / players_per_process) processes.

    players_per_process defaults to the manifest's (a smaller value is always allowed, e.g. to
    test the split); the logs of process k are client-<first player>.*.
    """
    per = players_per_process or man.players_per_process
    if per > man.players_per_process:
        raise ValueError(
            f"players_per_process {per} exceeds the {man.players_per_process} that {man.path} "
            "allows"
        )
    extra = list(cell.get("extra_client_flags", []))
    if check:
        _check_cell(man, cell)
        _check_extra(man, "extra_client_flags", extra, benchmark=False)
    out = []
    for first, count in client_split(int(cell.get("players", 1)), per):
        scalars = _scalars(cell, host, port, log_dir)
        scalars |= {
            "players": str(count),
            "first_player": str(first),
            "duration": arg_text(float(cell.get("duration_s", 0))),
        }
        lists = {"binary": man.binary_argv("client"), "params": param_args(cell), "extra": extra}
        out.append(render(man.client_command, scalars, lists))
    return out


def optional_flag_args(man: Manifest, values: Mapping[str, object]) -> list[str]:
    """-flag value for those of values (flag name without dash -> value) the manifest declares."""
    out: list[str] = []
    for flag, value in values.items():
        if flag in man.optional_flags:
            out += [f"-{flag}", arg_text(value)]
    return out


def process_env(man: Manifest, base: Mapping[str, str]) -> dict[str, str]:
    """The environment of a prototype process: base plus the manifest's `environment`."""
    return {**base, **man.environment}
