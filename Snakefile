# Netstick's workflow: build the systems under test, run a campaign's runs, tabulate, report.
#
#   snakemake                                   # the quick campaign on this machine
#   snakemake --config campaign=reliable-streams
#   snakemake --profile das6 --config campaign=net-celerity     # on DAS-6 (SLURM)
#   snakemake -n                                # what would run
#
# Configuration keys: workflow/schemas/config.schema.json. Profiles: profiles/.
# Outputs: data/raw/<campaign>/ (plan, runs, records), data/results/<campaign>/ (tables,
# statistics, figure data, artifact metadata), report/_output/<campaign>/ (index.html,
# index.pdf, ro-crate-metadata.json and the crate's data/).

import json
import math
import sys
import time
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from workflow.campaign import expand as campaigns
from workflow.campaign.benchmark import planned_for_benchmark
from workflow.campaign import progress
from workflow import layout

REPO = Path(workflow.basedir)
CONFIG_SCHEMA = REPO / "workflow" / "schemas" / "config.schema.json"
# `--config require_all=true` arrives as the string "true": boolean keys take true/false (and
# yes/no, 1/0) as users type them; anything else is left for the schema to refuse by name.
_BOOLEAN_WORDS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
for _key, _prop in json.loads(CONFIG_SCHEMA.read_text())["properties"].items():
    if _prop.get("type") == "boolean" and isinstance(config.get(_key), str):
        config[_key] = _BOOLEAN_WORDS.get(config[_key].strip().lower(), config[_key])
validate(config, str(CONFIG_SCHEMA))

if isinstance(config["prototypes"], str):
    config["prototypes"] = [p for p in config["prototypes"].split(",") if p]
CAMPAIGN = config["campaign"]  # a name of workflow/campaigns/, or a campaign file
if "/" in CAMPAIGN:
    CAMPAIGN = str(Path(CAMPAIGN).resolve())
DATA = Path(config["data_dir"]) if Path(config["data_dir"]).is_absolute() else REPO / config["data_dir"]
REPORT_ROOT = Path(config["report_dir"]) if Path(config["report_dir"]).is_absolute() else REPO / config["report_dir"]
NETSTICK = REPO / ".venv" / "bin" / "netstick"
ATTEMPTS = config["retries"] + 1

# Benchmark runs never share a machine: locally at most one job holding `bench` runs at a time.
# Under SLURM every run has exclusive nodes, and the profile lifts this limit.
workflow.global_resources.setdefault("bench", 1)

try:
    PLAN = campaigns.plan(
        CAMPAIGN,
        only_prototypes=config["prototypes"] or None,
        repetitions=config.get("repetitions"),
        duration_s=config.get("duration_s"),
        # Benchmark flags (planted regressions) only in a bench's own scratch campaign.
        benchmark=planned_for_benchmark(campaigns.campaign_path(CAMPAIGN), DATA),
    )
except campaigns.CampaignError as exc:
    raise WorkflowError(str(exc)) from None
RAW = DATA / "raw" / PLAN.name
RESULTS = DATA / "results" / PLAN.name
REPORT_DIR = REPORT_ROOT / PLAN.name
REPORT = REPORT_DIR / "index.html"
REPORT_PDF = REPORT_DIR / "index.pdf"
REPORT_CRATE = REPORT_DIR / "ro-crate-metadata.json"
if PLAN.budget_problem() and config["over_budget"] != "ok":
    raise WorkflowError(PLAN.budget_problem())
if PLAN.unavailable and config["require_all"]:
    raise WorkflowError(progress.describe_plan(PLAN) + "\n(require_all: every prototype must run)")


include: "workflow/rules/build.smk"
include: "workflow/rules/campaign.smk"
include: "workflow/rules/results.smk"
include: "workflow/rules/bench.smk"
include: "workflow/rules/reanalysis.smk"
include: "workflow/rules/history.smk"


localrules:
    all,
    plan,
    ingest,
    stats,
    figure_data,
    facts,
    artifact,
    render_report,
    crate,
    build_reference,


# Every planned record is a target too: a run whose record is missing (never run, interrupted,
# or moved aside by `netstick campaign reset-failed`) is run at the next start although the
# report exists, and the runs' newer records then renew the tables and the report.
rule all:
    input:
        REPORT,
        REPORT_CRATE,
        _records,


_session = {"started": time.monotonic(), "started_unix_ns": time.time_ns(), "monitor": None}
# Targets outside the campaign (`snakemake reanalysis`, `snakemake history`, a benchmark) get no
# campaign progress or summary.
_OTHER_TARGETS = {"reanalysis", "history", "bench_prototypes"}


def _campaign_targeted():
    targets = set(workflow.dag_settings.targets) if workflow.dag_settings else set()
    return not targets or not targets <= _OTHER_TARGETS


def _no_local_rate_limit():
    """Locally, no job-rate limit. Snakemake's (--max-jobs-per-timespan, default 100/1s) ends
    every scheduling round by arming a timer that starts another round a second later, so each
    finished job adds a chain of rounds that never stops, each solving the job selection over the
    runs still waiting (Snakemake 9.27). In a 168-run night that was 0.8 of this machine's 2
    cores beside every later run's window (others_cpu_cores, stats/interference.py). Local jobs
    are limited by `bench`; without the limit the scheduler wakes only when a job ends. On a
    cluster the limit protects the batch system, and Snakemake's CPU is not on a measured node.
    The scheduler exists from onstart on (its settings are given after the Snakefile is read)."""
    if config["cluster"] == "none" and hasattr(workflow.scheduler, "job_rate_limiter"):
        workflow.scheduler.job_rate_limiter = None


onstart:
    _no_local_rate_limit()
    if not _campaign_targeted():
        return
    print(progress.describe_plan(PLAN), file=sys.stderr)
    # Locally one run at a time (resource bench); on a cluster up to --jobs at once.
    parallel = 1 if config["cluster"] == "none" else max(1, workflow.resource_settings.nodes or 1)
    _session["monitor"] = progress.Monitor(PLAN, DATA / "raw", parallel=parallel).start()


def _finish():
    if not _campaign_targeted():
        return
    if _session["monitor"] is not None:
        _session["monitor"].stop()
    doc = progress.summarize(
        PLAN, DATA / "raw", report=REPORT, since_unix_ns=_session["started_unix_ns"]
    )
    doc["wall_s"] = round(time.monotonic() - _session["started"], 1)
    try:
        progress.write_summary(doc, DATA / "raw")
    except OSError as exc:  # a full disk: the summary is still printed below
        print(f"netstick: summary.json not written: {exc}", file=sys.stderr)
    print(progress.format_summary(doc, wall_s=doc["wall_s"]), file=sys.stderr)


onsuccess:
    _finish()


onerror:
    _finish()
