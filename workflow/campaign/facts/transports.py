"""The transports the ok runs measured, as they ran: per prototype and transport as measured
(enet, enet+merged-acks), the variant with its options and its manifest description, the
options the campaign set, and every setting the processes recorded (transport_settings of
their meta.json, CONTRACT.md 3.1) beside the library's own default from the manifest
(transports.settings). A setting recorded with two values in one campaign, or declared but not
recorded, is listed as such: the report shows what ran, not what the manifest says now.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from prototypes.contract import manifest as manifests
from workflow import layout


def _manifest(path: Path) -> manifests.Manifest | None:
    try:
        return manifests.load(path)
    except (OSError, manifests.ManifestError):
        return None


def _recorded(run: layout.RawRun) -> list[dict[str, str]]:
    """The transport_settings every process of the run recorded (none: an empty list)."""
    out = []
    for entry in ((run.meta or {}).get("versions") or {}).get("prototypes") or []:
        for proc in (entry.get("processes") or {}).values():
            settings = proc.get("transport_settings")
            if isinstance(settings, dict):
                out.append(settings)
    return out


def _entry(
    label: str, cells: Sequence[layout.RawRun], man: manifests.Manifest | None
) -> dict[str, Any]:
    cell = cells[0].cell
    transport = (
        man.transport(cell["transport"])
        if man is not None and cell["transport"] in man.transport_names
        else None
    )
    variant = cell.get("variant")
    described = transport.variants.get(variant) if transport is not None and variant else None
    values: dict[str, list[str]] = {}
    unrecorded = 0
    for run in cells:
        recorded = _recorded(run)
        unrecorded += not recorded
        for settings in recorded:
            for name, value in settings.items():
                if value not in values.setdefault(name, []):
                    values[name].append(value)
    declared = transport.settings if transport is not None else {}
    return {
        "transport": label,
        "library": transport.library if transport is not None else None,
        "variant": variant,
        "variant_description": described.description if described is not None else None,
        "variant_options": cell.get("variant_options") or {},
        "campaign_options": sorted(
            {json.dumps(r.cell.get("transport_options") or {}, sort_keys=True) for r in cells}
        ),
        "runs": len(cells),
        "runs_without_settings": unrecorded,
        "settings": [
            {
                "name": name,
                "values": values.get(name, []),
                "library_default": s.library_default if (s := declared.get(name)) else None,
                "description": s.description if s else None,
            }
            for name in dict.fromkeys([*declared, *values])
        ],
    }


def transports(
    runs: Sequence[layout.RawRun], repo: Path, shown: Callable[[str], str]
) -> dict[str, list[dict[str, Any]]]:
    """Per prototype (its manifest path as shown(path) gives it): every transport its ok runs
    measured, in order of first use."""
    groups: dict[tuple[str, str], list[layout.RawRun]] = {}
    for run in runs:
        if run.status == "ok":
            key = (str(run.cell["prototype"]), layout.transport_label(run.cell))
            groups.setdefault(key, []).append(run)
    loaded: dict[str, manifests.Manifest | None] = {}
    out: dict[str, list[dict[str, Any]]] = {}
    for (path, label), cells in groups.items():
        if path not in loaded:
            loaded[path] = _manifest(Path(path) if Path(path).is_absolute() else repo / path)
        out.setdefault(shown(path), []).append(_entry(label, cells, loaded[path]))
    return out
