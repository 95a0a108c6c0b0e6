"""The confirming re-run of a night's suspected regressions, as a campaign of its own.

The nightly decision (stats.history.decide, `netstick history decide`) suspects cells;
`confirm_campaign` writes the campaign that re-runs just them: the night's campaign file with an
`exclude` entry per cell that is not suspected, so the re-run's cells keep the night's cell ids (a
cell id hashes what is measured, not the campaign's name). It is named
<campaign>-confirm-<night_id> (confirm_name), so its runs land in data/raw/ and data/results/
directories of their own, never mixed with the night's, and an earlier night's re-run is never
taken for tonight's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from workflow.campaign import expand as campaigns
from workflow.campaign.benchmark import planned_for_benchmark
from workflow.files import write_text

CONFIRM_SUFFIX: Final = "-confirm"


def confirm_name(campaign: str, night_id: str | None) -> str:
    """<campaign>-confirm-<night_id>: each night's re-run is a campaign of its own."""
    return f"{campaign}{CONFIRM_SUFFIX}" + (f"-{night_id}" if night_id else "")


def _selector(cell: Mapping[str, Any], tight: bool) -> dict[str, Any]:
    """An `exclude` entry that matches cell: by its block, players, workload, window, profile
    and parameters; tight adds its prototype, transport and version where the campaign can name
    them."""
    sel: dict[str, Any] = {
        "block": cell["block"],
        "players": cell["players"],
        "workload": cell["workload"],
        "duration_s": cell["duration_s"],
        "network_profile": cell["network_profile"],
    }
    sel |= {f"params.{k}": v for k, v in (cell.get("params") or {}).items()}
    if tight and not cell.get("transport_options"):
        # The campaign names a prototype by its directory and a transport without options by
        # its own name; with options it gets a label the cell does not keep.
        sel |= {"prototype": Path(cell["prototype"]).parent.name, "transport": cell["transport"]}
        if cell.get("library_version"):
            sel["version"] = cell["library_version"]
    return sel


def confirm_campaign(
    doc: Mapping[str, Any],
    campaign: str | Path | None,
    out_dir: Path,
    **overrides: Any,
) -> Path:
    """Write out_dir/<campaign>-confirm-<night_id>.yaml (a campaign's name is its file's), the
    campaign that re-runs just the suspected cells of a decision (doc: its campaign, night_id
    and cells, each with `cell` and `suspected`, and rerun_cells), from the night's campaign
    (name or file; default the decision's campaign).

    overrides: the night's only_prototypes / repetitions / duration_s (expand.plan's), which the
    re-run must get too (they change cell ids). Cells that no selector can tell apart from a
    suspected one re-run too (a few runs more, never fewer). Raises CampaignError when nothing
    is suspected or the suspects cannot be re-run from this campaign.
    """
    # rerun_cells: the suspects and both cells of every library version found slower than its
    # predecessor (stats.history.decide); older decisions list only suspects.
    suspected = {c["cell"] for c in doc["cells"] if c["suspected"]} | set(
        doc.get("rerun_cells") or ()
    )
    if not suspected:
        raise campaigns.CampaignError("no suspected cell in the decision: nothing to confirm")
    path = campaigns.campaign_path(campaign or doc["campaign"])
    cdoc = yaml.safe_load(path.read_text())
    for block in cdoc["matrix"]:
        for proto in block["prototypes"]:
            if "manifest" in proto:  # relative to the campaign file, which moves
                proto["manifest"] = str((path.parent / proto["manifest"]).resolve())
    night = campaigns.plan(path, benchmark=planned_for_benchmark(path), **overrides)
    cells = {r.cell["cell_id"]: r.cell for r in night.runs}
    missing = sorted(suspected - cells.keys())
    if missing:
        raise campaigns.CampaignError(f"{path}: no cell {', '.join(missing)} in this campaign")
    cdoc["name"] = confirm_name(night.name, doc.get("night_id"))
    cdoc["description"] = f"Confirming re-run of suspected regressions of {night.name}."
    out = out_dir / f"{cdoc['name']}.yaml"
    for tight in (True, False):
        excludes = []
        keep = [_selector(cells[c], tight) for c in sorted(suspected)]
        for cid, cell in sorted(cells.items()):
            sel = _selector(cell, tight)
            if cid not in suspected and sel not in keep and sel not in excludes:
                excludes.append(sel)
        trial = dict(cdoc, exclude=[*cdoc.get("exclude", []), *excludes])
        write_text(out, yaml.safe_dump(trial, sort_keys=False))
        try:
            again = campaigns.plan(out, benchmark=planned_for_benchmark(out))
            planned = {r.cell["cell_id"] for r in again.runs}
        except campaigns.CampaignError:
            continue
        if suspected <= planned:
            return out
    raise campaigns.CampaignError(
        f"{path}: could not write a campaign re-running {', '.join(sorted(suspected))}"
    )
