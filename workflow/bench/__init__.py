"""The tool measuring itself: `netstick bench NAME` writes data/bench/NAME.json.

One module per bench, named as its command, each with `arguments(parser)` (its options) and
`main(args) -> int` (run it, print what it found, return the exit code). BENCHES lists them in
the order `netstick bench --help` shows them, with their one-line help; the CLI loads a bench's
module only when that bench runs (or shows its help), so no other command imports a benchmark.

What the benches share:
- record.py: the one writer of data/bench/NAME.json, and the formatter of its tables;
- targets.py: the targets, judged against what was measured and shown;
- cells.py: one cell run through the harness and measured as the stats stage measures a run
  (bench prototypes, and demo.py, which is `netstick demo`);
- scratch.py: Snakemake on a campaign of its own in a scratch directory (campaign, nightly,
  versions, history, the fault drill, and the workflow's tests);
- options.py: the option types of the parsers.
"""

from __future__ import annotations

BENCHES: dict[str, str] = {
    "prototypes": "every transport at 50 and 200 players through the harness, against the targets",
    "harness": "the harness's own costs: overhead per run, monitors, emulator accuracy",
    "campaign": "the workflow's costs: the quick campaign's time outside windows, dry runs",
    "faults": "a fault drill on short campaigns: statuses, orphans, runs lost or changed",
    "nightly": "one real night of the nightly campaign: wall time, detectable effects, "
    "versions compared",
    "versions": "two published versions of kcp-go and quic-go side by side: ratios with intervals",
    "variants": "each transport as its users get it against its named tunings (enet+merged-acks, "
    "...): RTT, CPU, packets, connect time under loss",
    "history": "identical nights raise no alarm; a night with emulated delay is flagged and "
    "confirmed",
    "noise": "identical runs of one cell: spread and detectable change per metric, callgrind's "
    "instructions per message and the load it keeps up with",
    "sensitivity": "what the nightly can see: identical code and planted regressions of 3-10 % "
    "decided as nights, detectable changes before and after",
    "stats": "the statistics stage on synthetic runs against pandas CSV reading",
    "report": "time and size of a campaign's report",
    "site": "the trend site of a synthetic year (365 nights x 30 cells): build time and size",
    "show": "a benchmark's record as the README's Markdown tables",
}


def module(name: str) -> str:
    """The module of `netstick bench NAME`."""
    return f"{__name__}.{name}"
