# From raw runs to the table and the report.
# runs.csv is the per-run table the stats stage builds on (Parquet, warm-up, intervals).


def _records(wc):
    return [records.record_path(PLAN.name, r.cell_id, r.run_id, DATA / "raw") for r in PLAN.runs]


rule runs_table:
    input:
        plan=RAW / "plan.json",
        records=_records,
    output:
        RESULTS / "runs.csv",
    shell:
        "{REPO}/.venv/bin/python -m stats.runs_table {RAW} --out {output}"


rule render_report:
    input:
        runs=RESULTS / "runs.csv",
        plan=RAW / "plan.json",
    output:
        REPORT,
    shell:
        "{REPO}/.venv/bin/python -m report.campaign_table {input.runs} --plan {input.plan} "
        "--out {output}"
