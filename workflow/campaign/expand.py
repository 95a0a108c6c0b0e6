"""Campaigns: workflow/campaigns/<name>.yaml, validated by workflow/schemas/campaign.schema.json,
expanded into runs (one repetition of one cell each) in a seeded random order (order.py: a
shuffle, or rounds of interleaved versions), recorded in plan.json and every run's run_order.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from prototypes.contract import manifest as manifests
from prototypes.contract.argv import check_cell
from prototypes.contract.library_builds import VersionBuild
from prototypes.contract.schema_errors import schema_error_line
from prototypes.contract.upstream_lock import UPSTREAM
from prototypes.contract.yamlfile import load_yaml
from workflow import layout
from workflow.campaign import order as run_order
from workflow.campaign import transports
from workflow.campaign.errors import CampaignError
from workflow.campaign.executables import (
    UNITY_PROTOTYPES,
    available_prototypes,
    executable_problem,
    missing_builds,
)
from workflow.campaign.overrides import DEFAULT_BUDGET_MIN, check_overrides
from workflow.files import REPO, repo_relative, shown_path
from workflow.harness import cell as cells
from workflow.harness import netprofiles as profiles

CAMPAIGN_DIR = REPO / "workflow" / "campaigns"
SCHEMA_PATH = REPO / "workflow" / "schemas" / "campaign.schema.json"
PLAN_SCHEMA = 1
PINNED = "pinned"

# Cell keys that say which run of which campaign this is, not what is measured: they stay out
# of the cell id's content hash so repetitions share one cell id.
PROVENANCE_KEYS = frozenset({"campaign", "cell_id", "run_id", "seed", "run_order", "block"})
# Keys a campaign decides itself; `defaults` and a block's `cell` may not set them.
EXPANDED_KEYS = frozenset(
    {
        "prototype",
        "library_version",
        "transport",
        "transport_options",
        "players",
        "workload",
        "params",
        "network_profile",
        "duration_s",
    }
)

# Estimated wall time of a run beyond its window (sandbox, start, connects, stop, log check,
# the workflow's own job start), from data/bench/harness.json: ~0.8 s at 200 players here.
RUN_OVERHEAD_S = 1.2
CONNECT_S_PER_PLAYER = 0.002
CAMPAIGN_FIXED_S = 30.0  # Snakemake's start, the build check, ingest and report


@dataclass(frozen=True, slots=True)
class Run(layout.CellRun):
    """One repetition of one cell, ready for the harness (cell is a validated cell document)."""

    cell: dict[str, Any]
    block: str

    def estimate_s(self) -> float:
        return (
            float(self.cell["duration_s"])
            + RUN_OVERHEAD_S
            + CONNECT_S_PER_PLAYER * int(self.cell["players"])
        )


@dataclass(frozen=True, slots=True)
class Unavailable:
    """Cells of a prototype that cannot run in this checkout, and why."""

    prototype: str
    reason: str
    cells: int
    runs: int


@dataclass
class Plan:
    """The expanded campaign: runnable runs in execution order, and what cannot run here."""

    name: str
    path: Path
    seed: int
    description: str
    budget_min: float | None
    runs: list[Run]
    unavailable: list[Unavailable] = field(default_factory=list)
    order: str = run_order.SHUFFLE  # order.py
    question: str | None = None  # the report's first line

    @functools.cached_property
    def by_key(self) -> dict[str, Run]:
        return {r.key: r for r in self.runs}

    @property
    def cell_ids(self) -> list[str]:
        return sorted({r.cell_id for r in self.runs})

    def estimate_s(self) -> float:
        return CAMPAIGN_FIXED_S + sum(r.estimate_s() for r in self.runs)

    def window_s(self) -> float:
        return sum(float(r.cell["duration_s"]) for r in self.runs)

    def budget_problem(self) -> str | None:
        """Why the campaign does not fit its budget (budget_min, or DEFAULT_BUDGET_MIN for a
        campaign that names none), or None."""
        est_min = self.estimate_s() / 60
        budget = self.budget_min if self.budget_min is not None else DEFAULT_BUDGET_MIN
        if est_min <= budget:
            return None
        if self.budget_min is None:
            return (
                f"{self.path}: the campaign needs about {est_min:.1f} min on one machine "
                f"({len(self.runs)} runs) and sets no budget_min; without one at most "
                f"{DEFAULT_BUDGET_MIN} min are planned: set budget_min, shorten it, or pass "
                "--config over_budget=ok"
            )
        return (
            f"{self.path}: budget_min: the campaign needs about {est_min:.1f} min on one machine "
            f"({len(self.runs)} runs), more than its budget of {self.budget_min:g} min; "
            "shorten it or pass --config over_budget=ok"
        )

    def to_doc(self) -> dict[str, Any]:
        """plan.json: the seed, the order and every run's cell, for the record."""
        return {
            "plan_schema": PLAN_SCHEMA,
            "campaign": self.name,
            "campaign_file": shown_path(self.path),
            "campaign_sha256": hashlib.sha256(self.path.read_bytes()).hexdigest(),
            "seed": self.seed,
            "order": run_order.DESCRIPTIONS[self.order],
            "order_name": self.order,
            "runs_total": len(self.runs),
            "cells_total": len(self.cell_ids),
            "estimate_s": round(self.estimate_s(), 1),
            "window_s": round(self.window_s(), 1),
            "budget_min": self.budget_min,
            "question": self.question,
            "unavailable": [_unavail(u) for u in self.unavailable],
            "runs": [{"key": r.key, "block": r.block, "cell": r.cell} for r in self.runs],
        }


def _unavail(u: Unavailable) -> dict[str, Any]:
    return {"prototype": u.prototype, "reason": u.reason, "cells": u.cells, "runs": u.runs}


# -- loading ----------------------------------------------------------------------------------


def campaign_path(name_or_path: str | Path) -> Path:
    """workflow/campaigns/<name>.yaml for a bare name, else the given path."""
    text = str(name_or_path)
    if "/" not in text and not text.endswith((".yaml", ".yml")):
        path = CAMPAIGN_DIR / f"{text}.yaml"
        if not path.is_file():
            known = ", ".join(available_campaigns()) or "none"
            raise CampaignError(
                f"campaign {text!r}: no file {shown_path(path)}; expected one of: {known}"
            )
        return path
    return Path(text)


def available_campaigns() -> list[str]:
    return sorted(p.stem for p in CAMPAIGN_DIR.glob("*.yaml"))


@functools.cache
def _schema() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return doc


def load(path: Path) -> dict[str, Any]:
    """Read and validate a campaign file (schema and the checks a schema cannot express)."""
    source = shown_path(path)
    try:
        doc = load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CampaignError(f"{source}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise CampaignError(f"{source}:{where}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise CampaignError(f"{source}: expected a mapping of campaign keys at the top level")
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        raise CampaignError("\n".join(schema_error_line(source, e) for e in errors))
    if doc["name"] != path.stem:
        raise CampaignError(
            f"{source}: key name: {doc['name']!r} must equal the file name {path.stem!r}"
        )
    for where, extra in _cell_overrides(doc):
        clash = sorted(EXPANDED_KEYS.intersection(extra) - {"duration_s", "network_profile"})
        clash += sorted(PROVENANCE_KEYS.intersection(extra))
        if clash:
            raise CampaignError(
                f"{source}: key {where}: {', '.join(clash)} are set by the matrix, not here"
            )
        try:
            cells.check_partial(dict(extra), source, where)
        except cells.CellError as exc:
            raise CampaignError(str(exc)) from None
    return doc


def _cell_overrides(doc: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    yield "defaults", doc.get("defaults", {})
    for i, block in enumerate(doc["matrix"]):
        yield f"matrix.{i}.cell", block.get("cell", {})


# -- expansion --------------------------------------------------------------------------------


def _param_axes(params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Workload parameters with list values as axes: every combination, keys sorted."""
    keys = sorted(params)
    values = [params[k] if isinstance(params[k], list) else [params[k]] for k in keys]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]


def _versions_of(
    proto: Mapping[str, Any], entries: list[transports.Entry], key: str
) -> dict[str, tuple[list[str], str]]:
    """Transport name -> (its versions, their key path) from a prototypes entry's `versions`: a
    list for every transport, or an object per transport (those not named run pinned; a
    transport's variants run the transport's versions)."""
    spec = proto.get("versions", [PINNED])
    names = [e.name for e in entries]
    if isinstance(spec, list):
        return {t: (list(spec), "versions") for t in names}
    for tname in spec:
        if tname not in names:
            raise CampaignError(
                f"{key}.{tname}: {tname!r} is not among this entry's transports; expected one "
                f"of {', '.join(dict.fromkeys(names))}"
            )
    return {
        t: (list(spec[t]), f"versions.{t}") if t in spec else ([PINNED], "versions") for t in names
    }


def _with_upstream(man: manifests.Manifest | None, tname: str, versions: list[str]) -> list[str]:
    """versions with the word `upstream` replaced by the versions tonight found upstream and
    built (versions/upstream.json beside the manifest, `netstick upstream prepare`), oldest
    first: none when nothing was prepared, so a night without discovery measures the rest."""
    if UPSTREAM not in versions:
        return versions
    found = man.upstream_versions(tname) if man is not None else ()
    out: list[str] = []
    for v in versions:
        out += list(found) if v == UPSTREAM else [v]
    return list(dict.fromkeys(out))


def _check_versions(man: manifests.Manifest, tname: str, versions: list[str], key: str) -> None:
    """Every version must be declared by the manifest and its lock files present: refused when
    planning, naming the library, the version and what is declared."""
    for vi, version in enumerate(versions):
        try:
            vb = man.version_build(tname, version)
        except ValueError as exc:
            raise CampaignError(f"{key}.{vi}: {repo_relative(str(exc))}") from None
        if vb is not None and vb.missing_inputs:
            how = (
                f"the files its build by {vb.external} needs"
                if vb.external is not None
                else "the lock files of every declared version (generate them: make versions)"
            )
            raise CampaignError(
                f"{key}.{vi}: library {vb.library} version {version}: missing "
                f"{', '.join(vb.missing_inputs)} in {shown_path(vb.cwd)}; expected {how}"
            )


def versions_in(plan: Plan) -> dict[tuple[str, str, str], list[str]]:
    """(prototype, transport, library) -> the library versions the plan's runs measure, in the
    manifest's order (pinned first), for every transport with another version than pinned."""
    seen: dict[tuple[str, str, str], list[str]] = {}
    order: dict[tuple[str, str, str], tuple[str, ...]] = {}
    for run in plan.runs:
        cell = run.cell
        man = manifests.load_once((REPO / cell["prototype"]).resolve())
        key = (man.name, cell["transport"], man.transport(cell["transport"]).library)
        order[key] = man.declared_versions(cell["transport"])
        version = str(cell.get("library_version", PINNED))
        if version not in seen.setdefault(key, []):
            seen[key].append(version)
    return {k: sorted(v, key=order[k].index) for k, v in seen.items() if v != [PINNED]}


def version_builds_of(plan: Plan) -> list[VersionBuild]:
    """The builds of other library versions the plan's runs need, one per executable."""
    out: dict[Path, VersionBuild] = {}
    for run in plan.runs:
        cell = run.cell
        version = str(cell.get("library_version", PINNED))
        if version == PINNED:
            continue
        man = manifests.load_once((REPO / cell["prototype"]).resolve())
        vb = man.version_build(cell["transport"], version)
        if vb is not None:
            out.setdefault(vb.executable, vb)
    return list(out.values())


def content_hash(cell: Mapping[str, Any]) -> str:
    """8 hex digits over every measurement-relevant key of a validated cell."""
    body = {k: v for k, v in cell.items() if k not in PROVENANCE_KEYS}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:8]


def _matches(selector: Mapping[str, Any], facts: Mapping[str, Any]) -> bool:
    for key, want in selector.items():
        if key.startswith("params."):
            have = facts["params"].get(key[len("params.") :])
            if have is None or str(have) != cells._param_text(want):
                return False
        elif key not in facts or facts[key] != want:
            return False
    return True


EXCLUDE_KEYS = (
    "block",
    "prototype",
    "version",
    "transport",
    "players",
    "workload",
    "duration_s",
    "network_profile",
)


def _check_excludes(doc: Mapping[str, Any], source: str) -> None:
    for i, sel in enumerate(doc.get("exclude", [])):
        for key in sel:
            if key not in EXCLUDE_KEYS and not key.startswith("params."):
                raise CampaignError(
                    f"{source}: key exclude.{i}.{key}: unknown key; expected one of "
                    f"{', '.join(EXCLUDE_KEYS)} or params.<name>"
                )


def _named_origin(problem: str, block: Mapping[str, Any], bi: int) -> str:
    """An extra-flags problem named by where the flags were written: the block's cell or the
    campaign's defaults (the cell merges both)."""
    key = problem.split(":", 1)[0]
    if key not in ("extra_server_flags", "extra_client_flags"):
        return problem
    origin = f"matrix.{bi}.cell" if key in block.get("cell", {}) else "defaults"
    return f"key {origin}.{problem}"


@dataclass
class _Expansion:
    """What planning found so far: runnable cells (cell id -> cell, block, repetitions) and,
    per (prototype, why not runnable), the cells that cannot run here."""

    doc: dict[str, Any]
    path: Path
    source: str
    known_profiles: Mapping[str, Any]
    repetitions: int | None
    duration_s: float | None
    benchmark: bool
    seen: dict[str, tuple[dict[str, Any], str, int]] = field(default_factory=dict)
    unavailable: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)


def plan(
    name_or_path: str | Path,
    *,
    only_prototypes: Sequence[str] | None = None,
    repetitions: int | None = None,
    duration_s: float | None = None,
    benchmark: bool = False,
) -> Plan:
    """Expand a campaign into its runs in the seeded execution order.

    only_prototypes keeps the named prototypes only; repetitions and duration_s override the
    file (shortened campaigns for tests and smoke runs; they change the cell ids, so shortened
    runs never mix with full ones). benchmark: planned for a benchmark, whose cells alone may
    carry a manifest's benchmark_flags (workflow.campaign.benchmark says which plans are)."""
    check_overrides(repetitions, duration_s)
    path = campaign_path(name_or_path)
    doc = load(path)
    source = shown_path(path)
    _check_excludes(doc, source)
    if only_prototypes is not None:
        _check_only(doc, only_prototypes, source)
    try:
        known_profiles = profiles.load_profiles()
    except profiles.ProfileError as exc:
        raise CampaignError(str(exc)) from None
    found = _Expansion(doc, path, source, known_profiles, repetitions, duration_s, benchmark)
    for bi, block in enumerate(doc["matrix"]):
        axes = _block_axes(found, bi)
        for pi, proto in enumerate(block["prototypes"]):
            if only_prototypes is None or proto["name"] in only_prototypes:
                _expand_prototype(found, bi, pi, axes)
    runs = _ordered_runs(found.seen, doc["seed"], doc.get("order", run_order.SHUFFLE))
    gone = [
        Unavailable(name, why, len(counts), sum(counts.values()))
        for (name, why), counts in sorted(found.unavailable.items())
    ]
    if not runs and not gone:
        raise CampaignError(f"{source}: the matrix and exclude leave no run")
    return Plan(
        name=doc["name"],
        path=path,
        seed=doc["seed"],
        description=doc["description"],
        budget_min=doc.get("budget_min"),
        runs=runs,
        order=doc.get("order", run_order.SHUFFLE),
        unavailable=gone,
        question=doc.get("question"),
    )


def _check_only(doc: Mapping[str, Any], only: Sequence[str], source: str) -> None:
    named = sorted({p["name"] for block in doc["matrix"] for p in block["prototypes"]})
    stray = [p for p in only if p not in named]
    if stray:
        raise CampaignError(
            f"{source}: prototypes (--prototypes / --config prototypes=): "
            f"{', '.join(map(repr, stray))} not in this campaign; expected names from "
            f"{', '.join(named)}"
        )


# A block's base cell, repetitions, durations and network profiles.
_BlockAxes = tuple[dict[str, Any], int, list[Any], list[Any]]


def _block_axes(found: _Expansion, bi: int) -> _BlockAxes:
    """A block's base cell, repetitions, durations and network profiles (overrides applied,
    profile names checked)."""
    doc, block = found.doc, found.doc["matrix"][bi]
    where = f"{found.source}: matrix.{bi} ({block['name']})"
    base = {**doc.get("defaults", {}), **block.get("cell", {})}
    reps = found.repetitions or block.get("repetitions") or doc["repetitions"]
    durations = [found.duration_s] if found.duration_s else block.get("durations_s")
    if durations is None:
        if "duration_s" not in base:
            raise CampaignError(
                f"{where}: key durations_s: missing, and defaults.duration_s is not set"
            )
        durations = [base["duration_s"]]
    nets = block.get("network_profiles") or [base.get("network_profile", "lan")]
    for ni, net in enumerate(nets):
        if isinstance(net, str) and net not in found.known_profiles:
            raise CampaignError(
                f"{where}: key network_profiles.{ni}: unknown profile {net!r}; expected one "
                f"of {', '.join(sorted(found.known_profiles))} or a profile object"
            )
    return base, reps, durations, nets


def _prototype_manifest(
    found: _Expansion, where: str, pi: int, proto: Mapping[str, Any]
) -> tuple[Path, manifests.Manifest | None, str | None]:
    """The prototype's manifest path, its manifest (None when absent) and why none of its cells
    can run here (None when they can). A typo'd name or a wrong manifest path is an error, not
    an empty campaign."""
    mpath = (
        (found.path.parent / proto["manifest"]).resolve()
        if "manifest" in proto
        else REPO / "prototypes" / proto["name"] / "prototype.yaml"
    )
    if mpath.is_file():
        try:
            man = manifests.load_once(mpath)
        except manifests.ManifestError as exc:
            raise CampaignError(f"{where}: prototypes.{pi}: {exc}") from None
        problem = executable_problem(man)
        if problem:
            raise CampaignError(f"{where}: key prototypes.{pi}: {problem}")
        return mpath, man, None
    if "manifest" in proto or proto["name"] not in UNITY_PROTOTYPES:
        known = sorted({*available_prototypes(), *UNITY_PROTOTYPES})
        raise CampaignError(
            f"{where}: key prototypes.{pi}"
            + (".manifest" if "manifest" in proto else ".name")
            + f": {proto.get('manifest', proto['name'])!r} has no manifest "
            f"({shown_path(mpath)} does not exist); expected a prototype of this "
            f"checkout or a Unity prototype: {', '.join(known)}"
        )
    absent = (
        f"no manifest {shown_path(mpath)} in this checkout (Unity prototypes are "
        "built by GameCI where a Unity licence is available)"
    )
    return mpath, None, absent


def _expand_prototype(found: _Expansion, bi: int, pi: int, axes: _BlockAxes) -> None:
    """Every cell of one prototypes entry of one block, into found."""
    block = found.doc["matrix"][bi]
    proto = block["prototypes"][pi]
    where = f"{found.source}: matrix.{bi} ({block['name']})"
    base, reps, durations, nets = axes
    mpath, man, absent = _prototype_manifest(found, where, pi, proto)
    entries = transports.entries(proto)
    per_transport = _versions_of(proto, entries, f"{where}: key prototypes.{pi}.versions")
    for ti, entry in enumerate(entries):
        tname, topts, label = entry.name, entry.options, entry.label
        versions, vkey = per_transport[tname]
        versions = _with_upstream(man, tname, versions)
        tuned: dict[str, Any] = {}
        if entry.variant:  # only then: the cells of stock transports keep their ids
            tuned["variant"] = entry.variant
        if man is not None:
            vopts = transports.check(
                man, where, f"prototypes.{pi}.transports.{ti}", proto["name"], entry
            )
            if vopts:
                tuned["variant_options"] = vopts
            _check_versions(man, tname, versions, f"{where}: key prototypes.{pi}.{vkey}")
        # Builds made elsewhere that are not here: their cells are listed, not run.
        missing = {
            v: missing_builds(man, tname, v) if man is not None else absent for v in versions
        }
        for version, players, wl, dur, net in itertools.product(
            versions, block["players"], block["workloads"], durations, nets
        ):
            if man is not None and wl["name"] not in man.workloads:
                raise CampaignError(
                    f"{where}: workload {wl['name']!r} is not offered by "
                    f"{proto['name']}; expected one of {', '.join(man.workloads)}"
                )
            for params in _param_axes(wl.get("params", {})):
                facts = {
                    "block": block["name"],
                    "prototype": proto["name"],
                    "version": version,
                    "transport": label or layout.transport_label({"transport": tname, **tuned}),
                    "players": players,
                    "workload": wl["name"],
                    "duration_s": dur,
                    "network_profile": net,
                    "params": params,
                }
                if any(_matches(sel, facts) for sel in found.doc.get("exclude", [])):
                    continue
                axes = {
                    "prototype": shown_path(mpath),
                    "library_version": version,
                    "transport": tname,
                    **tuned,
                    "transport_options": topts,
                    "players": players,
                    "workload": wl["name"],
                    "params": params,
                    # float: 14 in YAML and 14.0 on a command line are one cell
                    "duration_s": float(dur),
                    "network_profile": net,
                }
                full = _cell(found, where, bi, base, axes, man)
                cid = _cell_id(full, proto["name"], label)
                _add(found, full, cid, (block["name"], reps, proto["name"]), missing[version])


def _cell(
    found: _Expansion,
    where: str,
    bi: int,
    base: Mapping[str, Any],
    axes: Mapping[str, Any],
    man: manifests.Manifest | None,
) -> dict[str, Any]:
    """The validated cell document of one point of the matrix (without its cell id)."""
    doc_cell = {**copy.deepcopy(dict(base)), "campaign": found.doc["name"], **axes}
    try:
        full = cells.validate(doc_cell, source=f"{where}")
    except cells.CellError as exc:
        raise CampaignError(str(exc)) from None
    if man is not None:
        # Extra flags (from defaults or a block's cell) the manifest does not declare would
        # fail every run: refused when planning.
        try:
            check_cell(man, full, benchmark=found.benchmark)
        except ValueError as exc:
            problem = repo_relative(_named_origin(str(exc), found.doc["matrix"][bi], bi))
            raise CampaignError(f"{where}: {problem}") from None
    full.pop("cell_id", None)
    return full


def _cell_id(full: Mapping[str, Any], proto_name: str, label: str | None) -> str:
    """The readable id with the campaign's name of the prototype (not its directory's) and
    the transport's label, then the content hash."""
    readable = layout.derive_cell_id(full)
    dirname = Path(full["prototype"]).parent.name
    readable = proto_name.replace("/", "-") + readable[len(dirname) :]
    if label:
        readable = readable.replace(f"-{layout.transport_label(full)}-", f"-{label}-", 1)
    return f"{readable}-{content_hash(full)}"


def _add(
    found: _Expansion,
    full: dict[str, Any],
    cid: str,
    where: tuple[str, int, str],
    why_not: str | None,
) -> None:
    """One cell into found: runnable (once, with the larger repetition count of the blocks that
    name it) or listed under why it cannot run here. where: (block name, repetitions,
    prototype name)."""
    block_name, reps, proto_name = where
    if why_not is not None:
        cells_of = found.unavailable.setdefault((proto_name, why_not), {})
        cells_of[cid] = max(cells_of.get(cid, 0), reps)
        return
    if cid not in found.seen:
        full["cell_id"] = cid
        found.seen[cid] = (full, block_name, reps)
    else:  # the same cell in two blocks: keep the larger repetition count
        prev = found.seen[cid]
        found.seen[cid] = (prev[0], prev[1], max(prev[2], reps))


def _ordered_runs(
    seen: Mapping[str, tuple[dict[str, Any], str, int]], seed: int, order: str
) -> list[Run]:
    """Every repetition of every cell, in the campaign's seeded random order (order.py)."""
    runs: list[Run] = []
    for _, (full, block_name, reps) in sorted(seen.items()):
        for k in range(1, reps + 1):
            run_cell = dict(full)
            run_cell["run_id"] = f"r{k}"
            run_cell["seed"] = run_order.seed_of(seed, full, run_cell["run_id"], order)
            run_cell["block"] = block_name
            runs.append(Run(run_cell, block_name))
    runs = run_order.arrange(runs, seed, order)
    for i, r in enumerate(runs):
        r.cell["run_order"] = i
    return runs


def manifests_of(plan: Plan) -> dict[str, manifests.Manifest]:
    """The manifest of every prototype the plan runs, by the cells' prototype key."""
    return {
        path: manifests.load_once((REPO / path).resolve())
        for path in dict.fromkeys(r.cell["prototype"] for r in plan.runs)
    }


def nodes_for(players: int, players_per_node: int) -> int:
    """SLURM nodes a run needs: one for the server, enough for the players on the others."""
    return 1 + max(1, math.ceil(players / players_per_node))
