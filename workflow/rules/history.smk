# The nightly decision of the campaign, after its runs:
#
#   snakemake confirm --config campaign=nightly
#
# history_import appends data/results/<campaign> to data/history/<campaign>/ (one file per night,
# idempotent); history_decide compares tonight with the last 5 nights on the same hardware
# (decision.json: `suspected` per cell, `confirmed` null); confirm re-runs just the suspected
# cells as campaign <campaign>-confirm-<night_id> (its own data/raw and data/results directories,
# the night's cell ids and overrides) and writes regressions.json with `confirmed` filled in.
# With no suspect nothing re-runs and every cell is confirmed: false.

HISTORY_DIR = DATA / "history"
DECISION = RESULTS / "decision.json"
REGRESSIONS = RESULTS / "regressions.json"
# The night's overrides (they change cell ids), for the re-run's plan and its Snakemake.
_CONFIRM_OVERRIDES = (
    ([f"--prototypes {','.join(config['prototypes'])}"] if config["prototypes"] else [])
    + ([f"--repetitions {config['repetitions']}"] if config.get("repetitions") else [])
    + ([f"--duration-s {config['duration_s']}"] if config.get("duration_s") else [])
)
_CONFIRM_CONFIG = (
    ([f"prototypes={','.join(config['prototypes'])}"] if config["prototypes"] else [])
    + ([f"repetitions={config['repetitions']}"] if config.get("repetitions") else [])
    + ([f"duration_s={config['duration_s']}"] if config.get("duration_s") else [])
)


localrules:
    confirm,
    history_import,
    history_decide,
    confirm_rerun,


rule confirm:
    input:
        REGRESSIONS,


rule history_import:
    input:
        RESULTS / "runs.parquet",
    output:
        RESULTS / "history-import.txt",
    shell:
        "{NETSTICK} history import {RESULTS} --history-dir {HISTORY_DIR} > {output}"


rule history_decide:
    input:
        RESULTS / "history-import.txt",
    output:
        DECISION,
    shell:
        "{NETSTICK} history decide {PLAN.name} --history-dir {HISTORY_DIR} --out {output}"


rule confirm_rerun:
    input:
        DECISION,
    output:
        REGRESSIONS,
    run:
        doc = json.loads(Path(input[0]).read_text())
        # workflow.campaign.confirm.confirm_name: each night's re-run is a campaign of its own.
        name = f"{PLAN.name}-confirm-{doc['night_id']}"
        rerun = DATA / "results" / name
        if doc.get("rerun_cells") or any(c["suspected"] for c in doc["cells"]):
            shell(
                "{NETSTICK} history confirm-plan {input} --campaign-file {CAMPAIGN_FILE} "
                "--out {CONFIRM_DIR} {OVERRIDES}",
                CAMPAIGN_FILE=campaigns.campaign_path(CAMPAIGN),
                CONFIRM_DIR=RESULTS / "confirm",
                OVERRIDES=" ".join(_CONFIRM_OVERRIDES),
            )
            # A Snakemake of its own for the re-run's campaign (the plan is per process); no
            # lock, as this one holds it, and nothing else runs meanwhile: confirm is last.
            shell(
                "{SNAKEMAKE} --snakefile {REPO}/Snakefile --directory {REPO} --nolock "
                "--cores {CORES} --config campaign={CONFIRM_FILE} data_dir={DATA} "
                "report_dir={REPORT_ROOT} {CONFIG} -- {RERUN}/runs.parquet",
                SNAKEMAKE=REPO / ".venv" / "bin" / "snakemake",
                CONFIRM_FILE=RESULTS / "confirm" / f"{name}.yaml",
                CONFIG=" ".join(_CONFIRM_CONFIG),
                CORES=workflow.cores,
                RERUN=rerun,
            )
        shell(
            "{NETSTICK} history confirm {input} --rerun {RERUN} --history-dir {HISTORY_DIR} "
            "--out {output}",
            RERUN=rerun,
        )
