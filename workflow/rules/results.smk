# From raw runs to tables, statistics and the report.


def _records(wc):
    return [records.record_path(PLAN.name, r.cell_id, r.run_id, DATA / "raw") for r in PLAN.runs]


rule ingest:
    input:
        plan=RAW / "plan.json",
        records=_records,
    output:
        samples=RESULTS / "samples.parquet",
        runs=RESULTS / "runs.parquet",
        runs_csv=RESULTS / "runs.csv",
        series=RESULTS / "timeseries.parquet",
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


rule figure_data:
    input:
        RESULTS / "runs.parquet",
        RESULTS / "cells.parquet",
        RESULTS / "timeseries.parquet",
    output:
        RESULTS / "figures" / "manifest.json",
    shell:
        "{REPO}/.venv/bin/python -m report.figdata {RESULTS}"


rule artifact:
    input:
        RESULTS / "runs.parquet",
        RESULTS / "cells.csv",
        RESULTS / "findings.json",
    output:
        RESULTS / "artifact.json",
    shell:
        "{REPO}/.venv/bin/python -m report.artifact {RESULTS} --raw {RAW}"


rule render_report:
    input:
        runs=RESULTS / "runs.csv",
        cells=RESULTS / "cells.csv",
        findings=RESULTS / "findings.json",
        figures=RESULTS / "figures" / "manifest.json",
        artifact=RESULTS / "artifact.json",
        plan=RAW / "plan.json",
    output:
        html=REPORT,
        pdf=REPORT_PDF,
    shell:
        "{REPO}/.venv/bin/python -m report.render {RESULTS} --raw {RAW} --out {output.html}"
        " --pdf {output.pdf}"


rule crate:
    input:
        REPORT,
        RESULTS / "artifact.json",
    output:
        REPORT_CRATE,
    shell:
        "{REPO}/.venv/bin/python -m report.crate {REPORT_DIR} --results {RESULTS} --raw {RAW}"
