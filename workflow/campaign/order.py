"""The order in which a campaign's runs execute, and their seeds: a seeded shuffle, or rounds
of interleaved versions that replay one seed.

Both orders are random so that a slow drift of the machine (thermal state, background load, a
cache filling) cannot line up with one cell, and seeded so that one campaign file always gives
one order (plan.json records it, and every run's cell its run_order).

- ``shuffle`` (the default): every run of every cell in one seeded shuffle. A cell's runs may
  then fall anywhere in the campaign: two versions of one library compared by a night may be
  measured minutes apart, and a drift between those minutes is part of their difference.
- ``rounds``: randomised multiple interleaved trials (Abedi and Brecht, 2017). Round k runs
  repetition k of every cell, and within a round the cells that differ only by library version
  or transport variant (one comparison's context: prototype, transport, players, workload,
  profile, profiler, ...)
  run one after another in a random order, so each version is measured beside the versions it
  is compared with; the contexts' order within a round is random too. A drift then reaches the
  versions of a comparison alike, round by round, instead of falling between them, and a night
  cut short still holds whole rounds.

Seeds (a run's `seed`: the workload's random choices, e.g. where players move). In a shuffled
campaign every run has its own, from the campaign's seed, the cell and the run, so repetitions
sample the workload too. In rounds every run of one context replays one seed (common random
numbers): the versions compared meet the same workload, and their repetitions differ by the
machine's noise alone. Measured here (`netstick bench sensitivity`'s notes): the server's
instructions per message differ by up to 6 % between seeds of the active workload but about 1 %
between runs of one seed, so per-run seeds would hide a 3-5 % regression behind the workload's
own variation.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from typing import Any, Final, Protocol, TypeVar

SHUFFLE: Final = "shuffle"
ROUNDS: Final = "rounds"
ORDERS: Final = (SHUFFLE, ROUNDS)
DESCRIPTIONS: Final = {
    SHUFFLE: "seeded shuffle (random.Random(seed).shuffle of the runs sorted by key)",
    ROUNDS: (
        "rounds: repetition k of every cell before repetition k + 1 of any; within a round the "
        "versions of one context one after another, contexts and versions in a seeded random "
        "order"
    ),
}
# What a comparison of versions ignores: the version itself, the transport's variant (a named
# tuning is compared with the stock transport as a version is with another) and the run's own
# ids (a cell's id is derived from its keys, the version and variant included).
_NOT_CONTEXT: Final = frozenset(
    {"library_version", "variant", "variant_options", "cell_id", "run_id", "seed", "run_order",
     "block"}
)  # fmt: skip


class _Run(Protocol):
    @property
    def cell(self) -> dict[str, Any]: ...

    @property
    def key(self) -> str: ...


R = TypeVar("R", bound=_Run)


def repetition(run: _Run) -> int:
    """The run's repetition number k from its run id r<k>."""
    run_id = str(run.cell["run_id"])
    if not (run_id.startswith("r") and run_id[1:].isdigit()):
        raise ValueError(f"run {run.key}: run_id {run_id!r}: expected r<k> (k = 1, 2, ...)")
    return int(run_id[1:])


def context(cell: dict[str, Any]) -> str:
    """A comparison's context: the cell's keys but its version and ids, canonical JSON."""
    return json.dumps({k: v for k, v in cell.items() if k not in _NOT_CONTEXT}, sort_keys=True)


def run_seed(campaign_seed: int, cell_id: str, run_id: str) -> int:
    """A seed derived from the campaign's, a name and a run id (31 bits)."""
    digest = hashlib.sha256(f"{campaign_seed}/{cell_id}/{run_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def seed_of(campaign_seed: int, cell: dict[str, Any], run_id: str, order: str) -> int:
    """A run's seed: its own in a shuffle; in rounds, one per context (see the module's doc)."""
    if order == ROUNDS:
        return run_seed(campaign_seed, hashlib.sha256(context(cell).encode()).hexdigest(), "all")
    return run_seed(campaign_seed, str(cell["cell_id"]), run_id)


def arrange(runs: Sequence[R], seed: int, order: str = SHUFFLE) -> list[R]:
    """runs (in any order) in the campaign's execution order; ValueError for an unknown order."""
    if order not in ORDERS:
        raise ValueError(f"order {order!r}: expected one of {', '.join(ORDERS)}")
    ordered = sorted(runs, key=lambda r: r.key)
    rng = random.Random(seed)
    if order == SHUFFLE:
        rng.shuffle(ordered)
        return ordered
    rounds: dict[int, dict[str, list[R]]] = {}
    for r in ordered:
        rounds.setdefault(repetition(r), {}).setdefault(context(r.cell), []).append(r)
    out: list[R] = []
    for k in sorted(rounds):
        groups = [rounds[k][c] for c in sorted(rounds[k])]
        rng.shuffle(groups)
        for group in groups:
            rng.shuffle(group)
            out += group
    return out
