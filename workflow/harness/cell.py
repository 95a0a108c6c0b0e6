"""A cell run: the JSON document `netstick run-cell` executes, validated by
workflow/schemas/cell.schema.json with defaults filled in."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema

from prototypes.contract.schema_errors import schema_error_line

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
    # cell_id is the caller's: campaign expansion names its cells, `netstick run-cell` names a
    # cell file without one (workflow.campaign.layout.derive_cell_id).
    return out


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
