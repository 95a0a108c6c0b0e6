"""The artifact-evaluation check-list of one campaign in words: what ran, on what, from which code,
at what cost, and what that earns.

    netstick report CAMPAIGN --step checklist
        -> data/results/<campaign>/artifact.json

It reads what the workflow recorded and measures nothing itself: RESULTS/facts.json (written by
`netstick campaign facts`, workflow/campaign/facts/: the checkout and machine that collected the
results, and in its runs section what the runs recorded: commits, prototypes, toolchain,
hardware, timing, how the runs ended), RESULTS/metrics.json and the stats tables. From them it
writes the prototypes that ran (language, runtime, libraries, executable sha256 and whether
every run used the same, lock files) with their warnings, the cTuning check-list, the ACM badge
self-check (report/badges.py) and the commands to reproduce. What cannot be found is said in the
field ("not available: ..."), never guessed. The report's appendix and the RO-Crate
(report/crate.py) are built from artifact.json.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from report import badges, network, transports
from workflow.files import read_json, sha256_of, write_json

ARTIFACT_SCHEMA = 1
# The facts.json this words (workflow/campaign/facts/); an older one, without its runs section,
# cannot be worded: the facts step must run again.
FACTS_SCHEMA = 2
NOT_AVAILABLE = "not available"
RESULT_FILES = (
    "runs.parquet",
    "runs.csv",
    "cells.csv",
    "comparisons.csv",
    "changepoints.csv",
    "findings.json",
    "metrics.json",
    "ingest.json",
)
# The cTuning / ACM artifact check-list (ctuning.org/ae/submission_extra.html), in its order.
CTUNING_ITEMS = (
    "Algorithm",
    "Program",
    "Compilation",
    "Transformations",
    "Binary",
    "Model",
    "Data set",
    "Run-time environment",
    "Hardware",
    "Run-time state",
    "Execution",
    "Metrics",
    "Output",
    "Experiments",
    "How much disk space required (approximately)?",
    "How much time is needed to prepare workflow (approximately)?",
    "How much time is needed to complete experiments (approximately)?",
    "Publicly available?",
    "Code licenses (if publicly available)?",
    "Data licenses (if publicly available)?",
    "Workflow framework used?",
    "Archived (provide DOI)?",
)
RTT_DEFINITION = (
    "RTT is the uniform `net` probe of the prototype contract (prototypes/CONTRACT.md): players "
    "send timestamped probes that the server echoes in its receive path, immediately, the same "
    "way for every library, so transports are compared on one measure; rtt_net_p50/p95/p99_us "
    "are percentiles over each run's measurement window, and the report gives their median "
    "across runs."
)


# -- small helpers -------------------------------------------------------------------------------


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"  # not reached: the loop returns at GiB


def human_seconds(s: float) -> str:
    if s < 60:
        return f"{s:.1f} s"
    minutes, sec = divmod(round(s), 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _join(values: Sequence[Any]) -> str:
    return ", ".join(str(v) for v in values) if values else NOT_AVAILABLE


# -- the prototypes that ran ---------------------------------------------------------------------
# facts.json's runs section holds each prototype over the ok runs that started it, beside its
# record in the checkout now; here it gets its title, its warnings (an executable, manifest or
# lock file that changed during the campaign: the runs measured different builds), its notes
# and the rows the appendix prints.


def _make_words(command: Sequence[str], build_dir: str | None) -> str:
    """A build command as one would type it: `make -C ../.. build` run in prototypes/reference
    is the top-level `make build`."""
    words = list(command)
    at_top = (
        words[:2] == ["make", "-C"]
        and len(words) > 2
        and build_dir is not None
        and posixpath.normpath(posixpath.join(build_dir, words[2])) == "."
    )
    if at_top:
        return "`" + " ".join(["make", *words[3:]]) + "`"
    where = f" in {build_dir}" if build_dir and build_dir != "." else ""
    return "`" + " ".join(words) + "`" + where


def _in_all(runs: int) -> str:
    return f"the same in all {runs} runs" if runs > 1 else "in its one run"


def _versions_words(versions: dict[str, list[Any]]) -> str:
    return ", ".join(f"{k} {' / '.join(map(str, v))}" for k, v in versions.items()) or "none"


def _warnings(p: dict[str, Any]) -> list[str]:
    """What changed during the campaign: the runs measured different builds."""
    name, n, exe = p["name"], p["runs"], p["executable"]
    out = []
    if len(exe["runs_per_sha256"]) > 1:
        counts = "; ".join(f"{sha}: {k} runs" for sha, k in exe["runs_per_sha256"].items())
        out.append(
            f"the executable of {name} changed during the campaign: {len(exe['sha256'])} "
            f"different sha256 over {n} runs ({counts}); the runs measured different builds"
        )
    if len(p["manifest_sha256"]) > 1:
        out.append(
            f"the manifest {p['manifest']} changed during the campaign "
            f"({len(p['manifest_sha256'])} sha256)"
        )
    out += [
        f"the lock file {lf['path']} changed during the campaign ({len(lf['sha256'])} sha256)"
        for lf in p["lock_files"]
        if len(lf["sha256"]) > 1
    ]
    return out


def _notes(p: dict[str, Any]) -> list[str]:
    """What the runs did not record, versions the processes contradict, and a checkout whose
    executable is no longer the runs'."""
    name, n, exe = p["name"], p["runs"], p["executable"]
    out = []
    if exe["runs_without_sha256"]:
        out.append(
            f"{exe['runs_without_sha256']} of {n} runs of {name} recorded no executable sha256"
        )
    declared, reported = p["library_versions"], p["reported_library_versions"]
    differing = [lib for lib in declared if lib in reported and reported[lib] != declared[lib]]
    if differing:
        out.append(
            "the processes report other versions than the manifest: "
            + ", ".join(
                f"{lib} {' / '.join(map(str, reported[lib]))} (manifest: "
                f"{' / '.join(map(str, declared[lib]))})"
                for lib in differing
            )
        )
    now = p["checkout_now"]
    if now.get("executable_as_in_runs") is False:
        out.append(
            f"the executable of {name} in the checkout now (sha256 {now['executable_sha256']}) "
            "is not the one the runs used: rebuild it from the recorded commit to reproduce"
        )
    legacy = p["runs_recorded_before_prototype_records"]
    if legacy:
        out.append(
            f"{legacy} runs were recorded before runs named their prototype: their name, "
            "language, build and manifest libraries are those of the checkout now"
        )
    return out


def prototype(p: dict[str, Any]) -> dict[str, Any]:
    """One prototype of facts.json's runs section in words: its title, warnings, notes and
    the rows the appendix prints."""
    title = f"{p['name']} ({p['language'] or 'language not recorded'}, {p['manifest']})"
    doc = {**p, "title": title, "warnings": _warnings(p), "notes": _notes(p)}
    doc["rows"] = _prototype_rows(doc)
    return doc


def _prototype_rows(p: dict[str, Any]) -> list[dict[str, str]]:
    """The prototype as the appendix prints it: item and value, every path repo-relative."""
    exe = p["executable"]
    if exe["same_in_all_runs"]:
        hashes = f"sha256 {exe['sha256'][0]}, {_in_all(p['runs'])}"
    elif exe["sha256"]:
        hashes = "CHANGED DURING THE CAMPAIGN: " + "; ".join(
            f"sha256 {sha} in {k} runs" for sha, k in exe["runs_per_sha256"].items()
        )
    else:
        hashes = "sha256 not recorded"
    if exe["runs_without_sha256"] and exe["sha256"]:
        hashes += f"; {exe['runs_without_sha256']} runs recorded none"
    launcher = p["launcher"]
    rows = [
        ("manifest", f"{p['manifest']} (sha256 {_join(p['manifest_sha256'])})"),
        ("language", str(p["language"] or NOT_AVAILABLE)),
        (
            "runtime",
            f"{_join(p['runtime'])} ({_join(p['runtime_source'])})"
            if p["runtime"]
            else f"{NOT_AVAILABLE}: not recorded",
        ),
        (
            "build",
            _make_words(p["build_command"], p["build_dir"])
            if p["build_command"]
            else "none: the manifest has no build step",
        ),
        ("executable", f"{_join(exe['path'])}: {hashes}"),
    ]
    if launcher:
        rows.append(
            (
                "launcher",
                f"{_join(launcher['path'])} (sha256 {_join(launcher['sha256'])})",
            )
        )
    rows += [
        ("libraries (manifest)", _versions_words(p["library_versions"])),
        ("libraries (reported by the processes)", _versions_words(p["reported_library_versions"])),
        *transports.rows(p),
        (
            "lock files",
            "; ".join(f"{lf['path']} (sha256 {_join(lf['sha256'])})" for lf in p["lock_files"])
            or (
                "not recorded by the runs"
                if p["runs_recorded_before_prototype_records"]
                else "none (the manifest declares no lock_files)"
            ),
        ),
    ]
    if "go_modules" in p:
        mods = p["go_modules"]
        rows.append(
            (
                f"Go modules (go.mod, {len(mods)})",
                ", ".join(f"{m} {v}" for m, v in mods.items()) or NOT_AVAILABLE,
            )
        )
    now = p["checkout_now"]
    rows.append(
        (
            "checkout now",
            now.get("note")
            or f"executable sha256 {now.get('executable_sha256')}"
            + {True: " (as in the runs)", False: " (not the runs' executable)", None: ""}[
                now.get("executable_as_in_runs")
            ],
        )
    )
    rows += [("note", n) for n in p["notes"]]
    return [{"item": k, "value": v} for k, v in rows]


# -- sections: the checkout's facts with what the runs recorded ----------------------------------


def git_state(facts: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = dict(facts.get("git") or {"commit": None, "note": NOT_AVAILABLE})
    ran = facts["runs"]["git"]
    recorded, dirty_runs = ran["recorded_commits"], ran["runs_from_dirty_tree"]
    doc["recorded_commits"] = recorded
    doc["runs_from_dirty_tree"] = dirty_runs
    warnings = []
    if len(recorded) > 1:
        warnings.append(f"the runs were measured at {len(recorded)} different commits")
    if doc.get("commit") and recorded and any(c != doc["commit"] for c in recorded):
        warnings.append(f"the runs' commit(s) differ from HEAD {doc['commit']} at collection time")
    if dirty_runs:
        warnings.append(f"{dirty_runs} run(s) were measured from a work tree with changes")
    if not recorded:
        warnings.append("no run records a commit (no ok run with meta.json)")
    doc["warnings"] = warnings
    return doc


def software(facts: dict[str, Any], protos: list[dict[str, Any]]) -> dict[str, Any]:
    sw = facts.get("software") or {}
    go = sw.get("go") or {}
    ran = facts["runs"]["software"]
    go_protos = [p for p in protos if "go_modules" in p]
    go_doc: dict[str, Any] | str
    if go_protos:
        first = go_protos[0]
        go_doc = {
            "prototypes": [p["name"] for p in go_protos],
            "version_in_runs": list(dict.fromkeys(v for p in go_protos for v in p["runtime"] if v))
            or [f"{NOT_AVAILABLE}: not recorded by the runs"],
            "installed": go.get("installed", NOT_AVAILABLE),
            "go_mod_directive": first.get("go_mod_directive")
            or go.get("go_mod_directive", NOT_AVAILABLE),
            "modules": first.get("go_modules") or NOT_AVAILABLE,
            "modules_from": f"go.mod of the {first['name']} prototype, as the runs recorded it",
        }
    else:
        go_doc = (
            "no Go prototype ran in this campaign"
            if protos
            else f"{NOT_AVAILABLE}: no ok run recorded a prototype"
        )
    return {
        "python": sw.get("python") or {"version": NOT_AVAILABLE, "packages": {}},
        "r": sw.get("r") or {"version": NOT_AVAILABLE, "packages": {}},
        "pandoc": sw.get("pandoc") or {"system": NOT_AVAILABLE, "pypandoc_binary": NOT_AVAILABLE},
        "quarto": sw.get("quarto") or NOT_AVAILABLE,
        "go": go_doc,
        "prototype_runtimes": {p["name"]: p["runtime"] or [NOT_AVAILABLE] for p in protos},
        "python_in_runs": ran["python_in_runs"],
        "kernel": ran["kernel"],
        "os": ran["os"],
        "apt": sw.get("apt") or {"names": [], "installed": NOT_AVAILABLE},
        "note": (
            "python, r, pandoc, quarto, go.installed and apt are measured on the machine that "
            "collected the results (facts.json); go.version_in_runs, prototype_runtimes, "
            "python_in_runs (the harness's), kernel and os are recorded by the runs (meta.json)"
        ),
    }


def hardware(facts: dict[str, Any]) -> dict[str, Any]:
    return {
        "runs": facts["runs"]["hardware"],
        "collection_machine": {
            "source": "the machine that collected the results (facts.json)",
            **(facts.get("hardware") or {}),
        },
    }


def _with_human(entry: dict[str, Any]) -> dict[str, Any]:
    b = entry.get("bytes")
    return {**entry, "human": human_bytes(b)} if isinstance(b, int) else dict(entry)


def disk(facts: dict[str, Any]) -> dict[str, Any]:
    d = facts.get("disk") or {}
    missing = {"path": NOT_AVAILABLE, "bytes": None, "files": None, "note": NOT_AVAILABLE}
    total = d.get("total_bytes") or 0
    return {
        "raw": _with_human(d.get("raw") or missing),
        "results": _with_human(d.get("results") or missing),
        "total_bytes": total,
        "total_human": human_bytes(total),
        "environment": {k: _with_human(v) for k, v in (d.get("environment") or {}).items()},
        "environment_note": d.get("environment_note", NOT_AVAILABLE),
    }


def timing(facts: dict[str, Any]) -> dict[str, Any]:
    """The runs' time (facts.json's runs section) with the setup's, in words as well."""
    ran = facts["runs"]["timing"]
    run_s = ran.get("time_to_run_s")
    doc: dict[str, Any] = {
        "time_to_run_s": run_s,
        "time_to_run_human": human_seconds(run_s)
        if isinstance(run_s, int | float)
        else f"{NOT_AVAILABLE}: no run has finished",
        **{k: v for k, v in ran.items() if k != "time_to_run_s"},
    }
    prep = facts.get("time_to_prepare", f"{NOT_AVAILABLE}: facts.json has no time_to_prepare")
    if isinstance(prep, dict) and isinstance(prep.get("total_s"), int | float):
        prep = {**prep, "human": human_seconds(prep["total_s"])}
    doc["time_to_prepare"] = prep
    return doc


def results_files(results: Path) -> dict[str, Any]:
    files: dict[str, Any] = {}
    for name in RESULT_FILES:
        path = results / name
        if path.is_file():
            files[name] = {"bytes": path.stat().st_size, "sha256": sha256_of(path)}
        else:
            files[name] = f"{NOT_AVAILABLE}: {name} not found"
    doc: dict[str, Any] = {"files": files}
    findings = read_json(results / "findings.json")
    doc["findings"] = (
        len(findings.get("findings") or [])
        if findings is not None
        else f"{NOT_AVAILABLE}: findings.json missing or not JSON"
    )
    ingest = read_json(results / "ingest.json")
    doc["ingest"] = (
        {k: ingest.get(k) for k in ("runs", "runs_ok", "samples")}
        | {
            "bad_rows": sum((ingest.get("bad_rows") or {}).values()),
            "bad_files": len(ingest.get("bad_files") or []),
        }
        if ingest is not None
        else f"{NOT_AVAILABLE}: ingest.json missing or not JSON"
    )
    return doc


def metrics(results: Path) -> dict[str, Any]:
    doc = read_json(results / "metrics.json")
    listed = [m for m in (doc or {}).get("metrics") or [] if isinstance(m, dict)]
    return {
        "source": "metrics.json (the stats stage)"
        if doc
        else f"{NOT_AVAILABLE}: metrics.json missing or not JSON",
        "list": [{k: m.get(k) for k in ("name", "label", "unit")} for m in listed],
        "rtt_definition": RTT_DEFINITION,
    }


def licences(facts: dict[str, Any]) -> dict[str, Any]:
    lic = facts.get("licences") or {}
    code = lic.get("code") or f"{NOT_AVAILABLE}: facts.json has no licence"
    return {
        "code": code,
        "campaign_data": (
            f"as the code ({code.get('spdx') or code.get('first_line')}, {code.get('file')})"
            if isinstance(code, dict)
            else "no licence file: the measured data carry no licence"
        ),
        "external_data": lic.get("external_data") or [],
    }


# -- check-list, commands ------------------------------------------------------------------------


def commands(campaign: str, commit: str | None) -> list[dict[str, str]]:
    c = campaign
    return [
        {"what": "the code of this campaign", "command": f"git checkout {commit or 'HEAD'}"},
        {"what": "install, build, run and report (local)", "command": f"make run CAMPAIGN={c}"},
        {
            "what": "the workflow alone (local)",
            "command": f".venv/bin/snakemake --config campaign={c}",
        },
        {
            "what": "on the DAS-6 cluster (SLURM), from the repo root",
            "command": f".venv/bin/snakemake --profile das6 --config campaign={c}",
        },
        {
            "what": "the report alone",
            "command": f".venv/bin/netstick report {c}",
        },
        {
            "what": "this metadata",
            "command": f".venv/bin/netstick campaign facts {c} && "
            f".venv/bin/netstick report {c} --step checklist",
        },
    ]


def _program_words(p: dict[str, Any]) -> str:
    exe = _join(p["executable"]["path"])
    run_by = f", run by {_join(p['runtime'])}" if p["launcher"] and p["runtime"] else ""
    words = (
        f"{p['name']} prototype ({p['language'] or 'language not recorded'}, {p['manifest']}; "
        f"executable {exe}{run_by})"
    )
    if "go_modules" in p:
        n = len(p["go_modules"])
        return words + f" with the libraries pinned in go.mod ({n} module{'s' * (n != 1)})"
    return words + f" with {_versions_words(p['library_versions'])}"


def _compilation_words(p: dict[str, Any]) -> str:
    if not p["build_command"]:
        return f"{p['name']}: none (its manifest has no build step; run by {_join(p['runtime'])})"
    words = f"{p['name']}: built with {_make_words(p['build_command'], p['build_dir'])}"
    if "go_modules" in p:
        go = _join([str(v).removeprefix("go") for v in p["runtime"]])
        words += (
            f" (go {go} recorded by the runs; go.mod requires go "
            f"{p.get('go_mod_directive') or NOT_AVAILABLE})"
        )
    return words


def _binary_words(p: dict[str, Any]) -> str:
    exe = p["executable"]
    if exe["same_in_all_runs"]:
        hashes = f"sha256 {exe['sha256'][0]}, {_in_all(p['runs'])}"
    elif len(exe["sha256"]) > 1:
        hashes = (
            f"WARNING: {len(exe['sha256'])} different sha256 over {p['runs']} runs, the "
            "executable changed during the campaign"
        )
    else:
        hashes = f"sha256 not recorded by {exe['runs_without_sha256']} of {p['runs']} runs"
    if p["build_command"]:
        how = f"built from source by {_make_words(p['build_command'], p['build_dir'])}"
    else:
        how = "a script run by its launcher" if p["launcher"] else "used as found"
    return f"{p['name']}: {_join(exe['path'])}, {how}; {hashes}"


def ctuning_checklist(doc: dict[str, Any]) -> list[dict[str, str]]:
    exp, sw, hw, t = doc["experiments"], doc["software"], doc["hardware"], doc["time"]
    disk_doc, lic = doc["disk"], doc["licences"]
    runs_hw = hw["runs"]
    machine = hw["collection_machine"]
    protos = doc["prototypes"]
    none_ran = f"{NOT_AVAILABLE}: no ok run recorded a prototype"
    prep = t["time_to_prepare"]
    cmd = {c["what"]: c["command"] for c in doc["commands"]}
    c = doc["campaign"]
    raw_disk = disk_doc["raw"]
    env_disk = disk_doc["environment"]
    doi = doc["citation"].get("doi")
    values = {
        "Algorithm": (
            f"prototype servers and player emulators ({_join(exp['prototypes'])}) exchange game "
            f"traffic over {_join(exp['transports'])} for a fixed window; per-run RTT percentiles "
            "from the uniform net probe, CPU and RSS sampling, wire counters; medians across "
            "runs with intervals (stats/analyse.py)"
        ),
        "Program": "; ".join([_program_words(p) for p in protos] or [none_ran])
        + "; Python harness and statistics (workflow/, stats/); R report",
        "Compilation": "; ".join([_compilation_words(p) for p in protos] or [none_ran]),
        "Transformations": "none",
        "Binary": "; ".join([_binary_words(p) for p in protos] or [none_ran])
        + "; no binaries are distributed",
        "Model": "none",
        "Data set": (
            f"generated by the experiments: {raw_disk['path']} ({raw_disk.get('files')} files, "
            f"{raw_disk.get('human', NOT_AVAILABLE)}); no input data set"
        ),
        "Run-time environment": (
            f"{_join(sw['os'])}; kernel {_join(sw['kernel'])}; "
            f"Python {_join(sw['python_in_runs'])} (the harness, runs); "
            + "".join(f"{p['name']} run by {_join(p['runtime'])}; " for p in protos)
            + f"{sw['r']['version']}; "
            f"{sw['pandoc']['system']} and "
            f"{sw['pandoc']['pypandoc_binary']} (pypandoc-binary); quarto {sw['quarto']}"
        ),
        "Hardware": (
            f"{_join(runs_hw['cpu_model'])}, {_join(runs_hw['cpu_count'])} CPUs, hosts "
            f"{_join(runs_hw['hostnames'])} (runs); collection machine: "
            f"{human_bytes(machine.get('memory_total_bytes') or 0)} memory, "
            f"{machine.get('cpu_count')} CPUs"
        ),
        "Run-time state": (
            f"isolation {_join(runs_hw['isolation'])}, placement {_join(runs_hw['placement'])}, "
            f"CPU governor {_join(runs_hw['cpu_governor'])}, hardware instruction counter "
            f"{_join(runs_hw.get('instruction_counter') or ['not recorded'])}; run order: "
            f"{exp['order']}; network profiles: "
            f"{network.profiles_words(runs_hw.get('network_profiles'))}"
        ),
        "Execution": (
            f"`{cmd['install, build, run and report (local)']}`; on a SLURM cluster "
            f"`{cmd['on the DAS-6 cluster (SLURM), from the repo root']}`"
        ),
        "Metrics": _join([f"{m['name']} ({m['unit']})" for m in doc["metrics"]["list"]]),
        "Output": (
            f"data/raw/{c} (logs, monitor CSVs, meta.json, run records), data/results/{c} ("
            + _join([n for n, v in doc["results"]["files"].items() if isinstance(v, dict)])
            + f"), report/_output/{c}/index.html and its RO-Crate (ro-crate-metadata.json)"
        ),
        "Experiments": (
            f"{exp['cells']} cells, {_join(exp['repetitions_per_cell'])} repetitions each, "
            f"{exp['runs_planned']} runs planned: {exp['runs_ok']} ok, {exp['runs_failed']} "
            f"failed, {exp['runs_not_run']} not run; windows {_join(exp['durations_s'])} s; "
            f"seed {exp['seed']}"
        ),
        "How much disk space required (approximately)?": (
            f"{disk_doc['total_human']} for this campaign (raw "
            f"{disk_doc['raw'].get('human', NOT_AVAILABLE)}, results "
            f"{disk_doc['results'].get('human', NOT_AVAILABLE)}), measured; plus the "
            f"environment: .venv {env_disk.get('.venv', {}).get('human', NOT_AVAILABLE)}, .tools "
            f"{env_disk.get('.tools', {}).get('human', 'absent')} (Go module cache and Debian "
            "packages not measured)"
        ),
        "How much time is needed to prepare workflow (approximately)?": (
            f"{prep['human']} ({prep['source']}; the Go build is not included)"
            if isinstance(prep, dict)
            else prep
        ),
        "How much time is needed to complete experiments (approximately)?": (
            f"{t['time_to_run_human']} measured from the first run's start to the last run's end"
            + (
                f" ({t['measurement_windows_s']:.0f} s in measurement windows)"
                if t["time_to_run_s"] is not None
                else ""
            )
        ),
        "Publicly available?": (
            f"git remote {doc['public_remote']}"
            if doc["public_remote"]
            else "not yet: this checkout has no public remote"
        )
        + (f"; DOI {doi}" if doi else "; no DOI"),
        "Code licenses (if publicly available)?": badges.licence_words(lic["code"]),
        "Data licenses (if publicly available)?": (
            f"campaign data: {lic['campaign_data']}"
            + "".join(
                f"; {e['dataset']} (data/external): {e['first_line']}" for e in lic["external_data"]
            )
        ),
        "Workflow framework used?": (
            f"Snakemake {sw['python']['packages'].get('snakemake')} (Snakefile) with "
            f"snakemake-executor-plugin-slurm "
            f"{sw['python']['packages'].get('snakemake-executor-plugin-slurm')} for SLURM"
        ),
        "Archived (provide DOI)?": doi or "no: not archived, no DOI yet",
    }
    return [{"item": item, "value": values[item]} for item in CTUNING_ITEMS]


# -- the whole file ------------------------------------------------------------------------------


class FactsMissing(FileNotFoundError):
    """RESULTS/facts.json is missing, not JSON or older than its runs section: the workflow's
    facts step has not run (again)."""


def read_facts(results: Path) -> dict[str, Any]:
    """RESULTS/facts.json, or FactsMissing naming the command that writes it."""
    facts = read_json(results / "facts.json")
    if facts is None or (facts.get("facts_schema") or 0) < FACTS_SCHEMA or not facts.get("runs"):
        found = "missing or not JSON" if facts is None else "written by an older facts step"
        raise FactsMissing(
            f"{results / 'facts.json'}: {found}; write it first with "
            f"`netstick campaign facts {results.name}`"
        )
    return facts


def collect(results: Path) -> dict[str, Any]:
    """Everything artifact.json holds (see the module docstring)."""
    facts = read_facts(results)
    ran = facts["runs"]
    protos = [prototype(p) for p in ran.get("prototypes") or []]
    campaign = str(ran.get("campaign") or results.name)
    doc: dict[str, Any] = {
        "artifact_schema": ARTIFACT_SCHEMA,
        "campaign": campaign,
        "generated_unix_s": int(time.time()),
        "facts_generated_unix_s": facts.get("generated_unix_s"),
        "plan": ran.get("plan", NOT_AVAILABLE),
        "git": git_state(facts),
        "lock_files": facts.get("lock_files") or [],
        "prototypes": protos,
        "software": software(facts, protos),
        "hardware": hardware(facts),
        "disk": disk(facts),
        "time": timing(facts),
        "experiments": ran["experiments"],
        "results": results_files(results),
        "metrics": metrics(results),
        "licences": licences(facts),
        "citation": facts.get("citation") or {"file": NOT_AVAILABLE, "doi": None},
        "public_remote": facts.get("public_remote"),
    }
    recorded = doc["git"]["recorded_commits"]
    commit = recorded[0] if len(recorded) == 1 else doc["git"].get("commit")
    doc["commands"] = commands(campaign, commit)
    doc["acm_badges"] = badges.acm_badges(doc, facts.get("documentation") or {})
    doc["ctuning_checklist"] = ctuning_checklist(doc)
    return doc


def write(doc: dict[str, Any], out: Path) -> Path:
    return write_json(out, doc, sort_keys=False, strict=True)
