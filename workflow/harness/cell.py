"""A cell run: the JSON document `netstick run-cell` executes, validated by
workflow/schemas/cell.schema.json with defaults filled in."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "cell.schema.json"


class CellError(ValueError):
    """A cell document is invalid; the message names the file and the key."""


def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


def _where(error: jsonschema.ValidationError) -> str:
    path = ".".join(str(p) for p in error.absolute_path)
    return path or "(top level)"


def validate(doc: dict[str, Any], source: str = "cell") -> dict[str, Any]:
    """Validate doc and return a copy with every default filled in."""
    schema = _schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for e in errors:
            key = _where(e)
            if e.validator == "enum":
                lines.append(
                    f"{source}: key {key}: {e.instance!r} is not one of {e.validator_value}"
                )
            elif e.validator == "additionalProperties":
                allowed = ", ".join(sorted(schema["properties"]))
                lines.append(f"{source}: {e.message} (allowed keys: {allowed})")
            else:
                lines.append(f"{source}: key {key}: {e.message}")
        raise CellError("\n".join(lines))
    out = copy.deepcopy(doc)
    for key, prop in schema["properties"].items():
        if key not in out and "default" in prop:
            out[key] = copy.deepcopy(prop["default"])
    out["params"] = {k: _param_text(v) for k, v in out["params"].items()}
    if "cell_id" not in out:
        out["cell_id"] = derive_cell_id(out)
    return out


def _param_text(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def derive_cell_id(cell: dict[str, Any]) -> str:
    """A readable id for the cell, stable across repetitions (run_id and seed excluded)."""
    profile = cell["network_profile"]
    if not isinstance(profile, str):
        digest = hashlib.sha256(json.dumps(profile, sort_keys=True).encode()).hexdigest()[:8]
        profile = f"custom{digest}"
    proto = Path(cell["prototype"]).parent.name or "prototype"
    parts = [proto]
    if cell.get("library_version", "pinned") != "pinned":
        parts.append(str(cell["library_version"]))
    parts += [cell["transport"], f"p{cell['players']}", cell["workload"]]
    parts += [f"{k}={v}" for k, v in sorted(cell["params"].items())]
    parts += [f"t.{k}={v}" for k, v in sorted(cell["transport_options"].items())]
    parts += [profile, f"d{cell['duration_s']:g}"]
    return "-".join(parts)


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
