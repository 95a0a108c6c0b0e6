# From raw runs to tables, statistics and the report.


def _records(wc):
    return [layout.record_path(PLAN.name, r.cell_id, r.run_id, DATA / "raw") for r in PLAN.runs]


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
    # stats.ingest reads runs on every CPU it may use (its affinity, which a cluster job's
    # allocation sets): declared, so that Snakemake runs nothing beside it on them. Two, as it
    # was measured (bench stats on two cores); a cluster job gets them as cpus-per-task.
    threads: 2
    shell:
        "{NETSTICK} stats {PLAN.name} --data-dir {DATA} --step ingest"


rule stats:
    input:
        RESULTS / "runs.parquet",
    output:
        RESULTS / "cells.parquet",
        RESULTS / "cells.csv",
        RESULTS / "comparisons.parquet",
        RESULTS / "comparisons.csv",
        RESULTS / "changepoints.parquet",
        RESULTS / "changepoints.csv",
        RESULTS / "far-runs.parquet",
        RESULTS / "far-runs.csv",
        RESULTS / "findings.json",
        RESULTS / "metrics.json",
    shell:
        "{NETSTICK} stats {PLAN.name} --data-dir {DATA} --step analyse"


rule figure_data:
    input:
        RESULTS / "runs.parquet",
        RESULTS / "cells.parquet",
        RESULTS / "timeseries.parquet",
        RESULTS / "changepoints.parquet",
        RESULTS / "findings.json",
        RESULTS / "metrics.json",
        # the campaign's question (the facts step's copy of the plan)
        RESULTS / "plan.json",
    output:
        RESULTS / "figures" / "manifest.json",
    shell:
        "{NETSTICK} report {PLAN.name} --data-dir {DATA} --step figures"


# The campaign's facts (workflow/campaign/facts/): what every run recorded, so only once every
# planned run has its record, and the checkout and this machine (git, lock files, software, disk);
# after the stats so that the disk use counts their tables. With them the plan and a checksum
# manifest of the raw data, so that the report reads nothing of data/raw.
rule facts:
    input:
        plan=RAW / "plan.json",
        records=_records,
        stats=[RESULTS / "runs.parquet", RESULTS / "cells.csv", RESULTS / "findings.json"],
    output:
        RESULTS / "facts.json",
        RESULTS / "plan.json",
        RESULTS / "raw-manifest.tsv",
    shell:
        "{NETSTICK} campaign facts {PLAN.name} --data-dir {DATA}"


rule artifact:
    input:
        RESULTS / "facts.json",
        RESULTS / "runs.parquet",
        RESULTS / "cells.csv",
        RESULTS / "findings.json",
        RESULTS / "metrics.json",
    output:
        RESULTS / "artifact.json",
    shell:
        "{NETSTICK} report {PLAN.name} --data-dir {DATA} --step checklist"


rule render_report:
    input:
        runs=RESULTS / "runs.csv",
        cells=RESULTS / "cells.csv",
        findings=RESULTS / "findings.json",
        figures=RESULTS / "figures" / "manifest.json",
        artifact=RESULTS / "artifact.json",
        plan=RESULTS / "plan.json",
    output:
        html=REPORT,
        pdf=REPORT_PDF,
    shell:
        "{NETSTICK} report {PLAN.name} --data-dir {DATA} --report-dir {REPORT_ROOT} --step render"


rule crate:
    input:
        REPORT,
        RESULTS / "artifact.json",
        RESULTS / "plan.json",
        RESULTS / "raw-manifest.tsv",
    output:
        REPORT_CRATE,
    shell:
        "{NETSTICK} report {PLAN.name} --data-dir {DATA} --report-dir {REPORT_ROOT} --step crate"
