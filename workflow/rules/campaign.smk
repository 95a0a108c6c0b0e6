# One job per run. The job's output is the run's record (records.py); the measured run directory
# next to it is written by the harness and never deleted by Snakemake.

import datetime

_MANIFESTS = campaigns.manifests_of(PLAN)


def _run(wc):
    return PLAN.by_key[f"{wc.cell}/{wc.run}"]


def _binary(wc):
    # The executable of a prototype the workflow builds (workflow/rules/build.smk); one without
    # a build command was checked to exist when planning. ancient(): a rebuilt binary never
    # re-runs finished runs.
    proto = _run(wc).cell["prototype"]
    if proto.startswith("prototypes/reference/"):
        return [ancient(REF_BINARY)]
    man = _MANIFESTS[proto]
    return [ancient(str(man.executable))] if man.build_command is not None else []


def _order_priority(wc):
    # Snakemake starts the highest priority first: the seeded random order of the plan.
    return len(PLAN.runs) - _run(wc).cell["run_order"]


def _runtime_min(wc):
    """Minutes to request: the window plus start-up and drain, within the cluster's limit."""
    cell = _run(wc).cell
    need = math.ceil((float(cell["duration_s"]) + 60 + 0.01 * cell["players"]) / 60) + 1
    limit = _time_limit_min()
    if limit is not None and need > limit:
        raise WorkflowError(
            f"run {wc.cell}/{wc.run} needs {need} min but the time limit now is {limit} min "
            f"(config day_limit_min/night_limit_min, day {config['day_hours']} on weekdays); "
            "run it at night or shorten duration_s"
        )
    return need


def _time_limit_min():
    """The cluster's job time limit at this hour, or None when not on a cluster (local)."""
    if config["cluster"] == "none":
        return None
    now = datetime.datetime.now()
    start, end = (int(h.split(":")[0]) for h in config["day_hours"].split("-"))
    day = now.weekday() < 5 and start <= now.hour < end
    return config["day_limit_min"] if day else config["night_limit_min"]


def _nodes(wc):
    return campaigns.nodes_for(_run(wc).cell["players"], config["players_per_node"])


def _slurm_resources():
    """Multi-node runs: `mpi` makes the job step run the harness once on the first node, which
    then places the server and the players with srun itself (workflow/harness/placement.py)."""
    if config["cluster"] == "none":
        return {}
    return {
        "nodes": _nodes,
        "tasks": _nodes,
        "mpi": "srun",
        "slurm_extra": "--exclusive" if config["exclusive"] else "",
    }


rule plan:
    output:
        RAW / "plan.json",
    params:
        # A changed campaign (or override) is a new plan; the old one is kept in plans/.
        digest=lambda wc: campaigns.content_hash({"runs": [r.key for r in PLAN.runs]}),
    run:
        progress.write_plan(PLAN, DATA / "raw")


rule run:
    input:
        # The job measures the cell plan.json holds (never planned again). ancient(): a plan
        # written again (a changed campaign keeps its old plan in plans/) re-runs no finished run.
        plan=ancient(RAW / "plan.json"),
        binary=_binary,
    output:
        RAW / "{cell}" / "{run}.json",
    wildcard_constraints:
        cell=r"[^/]+",
        run=r"r\d+",
    retries: config["retries"]
    priority: _order_priority
    resources:
        bench=1,
        runtime=_runtime_min,
        attempt=lambda wc, attempt: attempt,
        **_slurm_resources(),
    shell:
        "{NETSTICK} campaign run-one {input.plan} {wildcards.cell}/{wildcards.run} "
        "--attempt {resources.attempt} --attempts {ATTEMPTS}"
