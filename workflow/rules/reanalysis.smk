# Reports outside a campaign, each computed by the stats stage and then drawn; not part of `all`:
#
#   snakemake reanalysis                            # Net-Celerity's committed raw data
#   snakemake history --config nights=a,b,c         # nightly regressions, oldest night first
#
# nights: results directories (data/results/<name>, or paths), oldest first.

REANALYSIS_DATA = REPO / "data" / "external" / "net-celerity"
REANALYSIS_RESULTS = DATA / "results" / "net-celerity-reanalysis"
REANALYSIS_REPORT = REPORT_ROOT / "net-celerity-reanalysis"
HISTORY_RESULTS = DATA / "results" / "history"
HISTORY_REPORT = REPORT_ROOT / "history"

if isinstance(config["nights"], str):
    config["nights"] = [n for n in config["nights"].split(",") if n]


def _night_dir(name):
    """A night's results directory: a path as given (relative to the repository), or a name
    under data/results."""
    path = Path(name)
    if "/" not in name:
        return DATA / "results" / name
    return path if path.is_absolute() else REPO / path


def _nights(wc):
    if len(config["nights"]) < 2:
        raise WorkflowError(
            "history: --config nights=A,B[,...] needs at least two results directories "
            f"(oldest first), got {config['nights'] or 'none'}"
        )
    return [_night_dir(n) / "runs.parquet" for n in config["nights"]]


localrules:
    reanalysis,
    reanalysis_compute,
    reanalysis_render,
    history,
    history_compute,
    history_render,


rule reanalysis:
    input:
        REANALYSIS_REPORT / "index.html",
        REANALYSIS_REPORT / "index.pdf",


rule reanalysis_compute:
    input:
        lambda wc: sorted(str(p) for p in REANALYSIS_DATA.rglob("*") if p.is_file()),
    output:
        REANALYSIS_RESULTS / "findings.json",
    shell:
        "{NETSTICK} reanalysis compute --data {REANALYSIS_DATA} --out {REANALYSIS_RESULTS}"


rule reanalysis_render:
    input:
        REANALYSIS_RESULTS / "findings.json",
    output:
        html=REANALYSIS_REPORT / "index.html",
        pdf=REANALYSIS_REPORT / "index.pdf",
    shell:
        "{NETSTICK} reanalysis render {REANALYSIS_RESULTS} --out {output.html} --pdf {output.pdf}"


rule history:
    input:
        HISTORY_REPORT / "index.html",


rule history_compute:
    input:
        _nights,
    output:
        HISTORY_RESULTS / "trends.csv",
        HISTORY_RESULTS / "verdicts.csv",
        HISTORY_RESULTS / "history.json",
    params:
        nights=lambda wc: " ".join(str(_night_dir(n)) for n in config["nights"]),
    shell:
        "{NETSTICK} history compute {params.nights} --out {HISTORY_RESULTS}"


rule history_render:
    input:
        HISTORY_RESULTS / "trends.csv",
        HISTORY_RESULTS / "verdicts.csv",
        HISTORY_RESULTS / "history.json",
    output:
        HISTORY_REPORT / "index.html",
    shell:
        "{NETSTICK} history render {HISTORY_RESULTS} --out {output}"
