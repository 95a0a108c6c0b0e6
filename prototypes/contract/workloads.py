"""The contract's workloads and their parameters (CONTRACT.md section 5), as data.

workloads.schema.json holds one JSON Schema per workload. Campaign planning checks every cell's
params against it, so a parameter a workload does not have (``idle`` with ``blocks``) or a value
outside the contract (``stream`` with ``channel: tcp`` or ``size: -1``) is refused before any
run starts, instead of failing every run with the prototype's exit code 2.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema

from prototypes.contract.schema_errors import describe_value, schema_problem

SCHEMA_PATH = Path(__file__).with_name("workloads.schema.json")
_BOOL_WORDS = {"true": True, "false": False}
DEFAULT_PROBE_HZ = 10  # -probe-hz (CONTRACT.md section 1)


class WorkloadError(ValueError):
    """A cell's workload or parameters break the contract; the message names key and rule."""


@functools.cache
def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return doc


def names() -> list[str]:
    """The contract's workload names, in the schema's order."""
    return list(_doc()["workloads"])


def defaults(workload: str) -> dict[str, Any]:
    """Every parameter of workload that has a default, with that default."""
    props = _doc()["workloads"][workload]["properties"]
    return {k: p["default"] for k, p in props.items() if "default" in p}


def _property_types(workload: str) -> dict[str, str]:
    doc = _doc()
    out: dict[str, str] = {}
    for key, prop in doc["workloads"][workload]["properties"].items():
        ref = prop.get("$ref", "")
        target = doc["$defs"][ref.rsplit("/", 1)[-1]] if ref else prop
        if "type" in target:
            out[key] = target["type"]
    return out


def _as_typed(value: Any, kind: str | None) -> Any:
    """A parameter as the prototype will read it from ``-param key=value``: the text "10" is the
    integer 10, "true" is true; anything that does not parse stays as given (and fails)."""
    if not isinstance(value, str) or kind is None:
        return value
    text = value.strip()
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        return value
    if kind == "boolean":
        return _BOOL_WORDS.get(text.lower(), value)
    return value


def check(workload: str, params: Mapping[str, Any], source: str = "") -> None:
    """Raise WorkloadError naming source (when given), the key params.KEY and what the contract
    allows."""
    doc = _doc()
    prefix = f"{source}: " if source else ""
    if workload not in doc["workloads"]:
        raise WorkloadError(
            f"{prefix}key workload: {describe_value(workload)} is not a workload of the "
            f"contract; expected one of {', '.join(names())}"
        )
    kinds = _property_types(workload)
    typed = {k: _as_typed(v, kinds.get(k)) for k, v in params.items()}
    schema = {
        "$defs": doc["$defs"],
        "type": "object",
        "properties": {"params": doc["workloads"][workload]},
    }
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors({"params": typed}),
        key=lambda e: list(map(str, e.absolute_path)),
    )
    if not errors:
        return
    lines = []
    for err in errors:
        if err.validator == "not":  # world: objects and size name the same thing
            lines.append(f"key params: give objects or size for workload {workload}, not both")
        elif err.validator == "additionalProperties":
            for key in sorted(set(typed) - set(kinds)):
                allowed = f"expected one of {', '.join(kinds)}" if kinds else "it takes none"
                lines.append(f"key params.{key}: not a parameter of workload {workload}; {allowed}")
        else:
            lines.append(schema_problem(err))
    raise WorkloadError("\n".join(prefix + line for line in lines))


def rtt_source(cell: Mapping[str, Any]) -> str:
    """Where a run's RTT rows of kind net come from (CONTRACT.md, workloads and -probe-hz):
    "stream" (the stream's own echoes), "pingpong" (its probes one at a time), "probe:<hz>"
    (the periodic net probe), or "none" (periodic probes off and no workload that probes)."""
    if cell["workload"] in ("stream", "pingpong"):
        return str(cell["workload"])
    flags = [str(f) for f in cell.get("extra_client_flags", [])]
    hz: float = DEFAULT_PROBE_HZ
    for i, flag in enumerate(flags[:-1]):
        if flag.lstrip("-") == "probe-hz":
            hz = float(flags[i + 1])
    return "none" if hz == 0 else f"probe:{hz:g}"
