"""A cell run: the JSON document `netstick run-cell` executes, validated by
workflow/schemas/cell.schema.json with defaults filled in."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema

from prototypes.contract.schema_errors import schema_error_line, schema_problem
from workflow.harness import netprofiles

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "cell.schema.json"


class CellError(ValueError):
    """A cell document is invalid; the message names the file and the key."""


def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


def validate(doc: dict[str, Any], source: str = "cell") -> dict[str, Any]:
    """Validate doc and return a copy with every default filled in."""
    schema = _schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        raise CellError("\n".join(schema_error_line(source, e) for e in errors))
    out = copy.deepcopy(doc)
    for key, prop in schema["properties"].items():
        if key not in out and "default" in prop:
            out[key] = copy.deepcopy(prop["default"])
    out["params"] = {k: _param_text(v) for k, v in out["params"].items()}
    _check_placement(out, source)
    # cell_id is the caller's: campaign expansion names its cells, `netstick run-cell` names a
    # cell file without one (workflow.layout.derive_cell_id).
    return out


def _check_placement(cell: dict[str, Any], source: str) -> None:
    """placement slurm puts the server and its players on different nodes, where neither a
    run's namespaces nor the emulator between them exist: a cell asking for those is refused
    before it runs. (placement auto keeps such a cell on one node of the allocation.)"""
    if cell.get("placement") != "slurm":
        return
    if cell.get("isolation") == "netns":
        raise CellError(
            f"{source}: key isolation: netns is not available with placement slurm (the server "
            "and its players on different nodes); use isolation auto or none, or placement auto "
            "or local to measure in namespaces on one node"
        )
    try:
        name, profile = netprofiles.resolve(cell["network_profile"])
    except (netprofiles.ProfileError, KeyError, ValueError):
        return  # an unknown profile is named where profiles are checked
    if netprofiles.needs_emulator(profile):
        raise CellError(
            f"{source}: key network_profile: {name} needs the emulator between the server and "
            "its players, which cannot sit between two nodes (placement slurm); use placement "
            "auto (keeps cells with such a profile on one node of the allocation) or local"
        )


def check_partial(doc: dict[str, Any], source: str, where: str) -> None:
    """Check the keys doc sets (a campaign's defaults or a block's cell) against the cell schema,
    before they are merged into cells: an error names where they were written, e.g.
    ``key defaults.duration_s``, not the matrix block that first used them."""
    schema = {k: v for k, v in _schema().items() if k != "required"}
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    lines = []
    for err in errors:
        problem = schema_problem(err)
        if problem.startswith("key "):
            problem = f"key {where}.{problem[4:]}"
        else:  # "(top level): ..." is the mapping itself
            problem = f"key {where}: {problem.split(': ', 1)[-1]}"
        lines.append(f"{source}: {problem}")
    if lines:
        raise CellError("\n".join(lines))


def _param_text(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def load(path: Path) -> dict[str, Any]:
    """Read and validate a cell JSON file."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise CellError(f"{path}: no such file") from exc
    except json.JSONDecodeError as exc:
        raise CellError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise CellError(f"{path}: expected a JSON object")
    return validate(doc, str(path))
