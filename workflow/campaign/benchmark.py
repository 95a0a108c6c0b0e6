"""Which plans are made for a benchmark: the only plans whose cells may carry a manifest's
benchmark_flags, server flags that plant a regression of known size (prototypes/contract/argv.py
refuses them elsewhere, naming the campaign file and the key).

A bench that runs campaigns writes a scratch campaign into a directory of its own and runs
Snakemake there (workflow/bench/scratch.py); Snakemake plans the campaign again in its own
process, and so does the confirming re-run of a night (workflow/campaign/confirm.py). The
permission must reach those processes and must not reach a user's campaign. Neither half of the
mechanism would do alone:

- a campaign key (`benchmark: true`) can be written into any campaign, and would make the guard
  a formality;
- an environment variable, once exported in a shell, would let every campaign plant.

So `netstick bench` sets NETSTICK_BENCH_SCRATCH to the scratch directory it created (bench_env),
and a plan is made for a benchmark only when that variable is set AND the campaign file (and the
data directory, where Snakemake says it) lie under that directory. A campaign of
workflow/campaigns/ or anywhere else is refused even with the variable set, and a planted run's
data stay in the bench's scratch directory, never in data/raw beside real measurements.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

BENCH_SCRATCH_ENV = "NETSTICK_BENCH_SCRATCH"


def scratch_root(environ: Mapping[str, str] | None = None) -> Path | None:
    """The scratch directory of the bench that started this process, or None."""
    value = (os.environ if environ is None else environ).get(BENCH_SCRATCH_ENV, "")
    return Path(value).resolve() if value else None


def planned_for_benchmark(*paths: Path | str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether a plan of the campaign file paths[0] (with its data directory and other paths)
    is made for a benchmark: a bench's scratch directory is named in the environment and every
    path lies under it."""
    root = scratch_root(environ)
    return (
        root is not None
        and bool(paths)
        and all(Path(p).resolve().is_relative_to(root) for p in paths)
    )


def bench_env(root: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a Snakemake a bench runs on its scratch campaign under root (see
    scratch.run's env): base (default this process's) naming root as the bench's scratch."""
    return {**(os.environ if base is None else base), BENCH_SCRATCH_ENV: str(root.resolve())}
