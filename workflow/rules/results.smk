# From raw runs to tables, statistics and the report.


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


rule ingest:
    input:
        plan=RAW / "plan.json",
        records=_records,
    output:
        samples=RESULTS / "samples.parquet",
        runs=RESULTS / "runs.parquet",
        report=RESULTS / "ingest.json",
    shell:
        "{REPO}/.venv/bin/python -m stats.ingest {RAW} --out {RESULTS}"


rule stats:
    input:
        RESULTS / "runs.parquet",
    output:
        RESULTS / "cells.parquet",
        RESULTS / "cells.csv",
        RESULTS / "comparisons.parquet",
        RESULTS / "comparisons.csv",
        RESULTS / "findings.json",
    shell:
        "{REPO}/.venv/bin/python -m stats.analyse {RESULTS}"


rule render_report:
    input:
        runs=RESULTS / "runs.csv",
        cells=RESULTS / "cells.csv",
        findings=RESULTS / "findings.json",
        plan=RAW / "plan.json",
    output:
        REPORT,
    shell:
        "{REPO}/.venv/bin/python -m report.render {RESULTS} --raw {RAW} --out {output}"
