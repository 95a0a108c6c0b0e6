"""The runs' execution order (workflow/campaign/order.py): a seeded shuffle, or rounds in which
the versions of one comparison run beside each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from workflow.campaign import order
from workflow.campaign.expand import plan as expand


@dataclass(frozen=True)
class FakeRun:
    cell: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.cell['cell_id']}/{self.cell['run_id']}"


def runs(reps: int = 4) -> list[FakeRun]:
    """Two transports, kcp at three versions, tcp at one, reps repetitions each."""
    out = []
    for transport, versions in (("kcp", ("pinned", "v1", "v2")), ("tcp", ("pinned",))):
        for v in versions:
            for k in range(1, reps + 1):
                cell = {"cell_id": f"{transport}-{v}", "run_id": f"r{k}", "seed": k,
                        "transport": transport, "players": 100, "library_version": v}  # fmt: skip
                out.append(FakeRun(cell))
    return out


def test_rounds_put_repetition_k_of_every_cell_before_k_plus_one_and_versions_side_by_side():
    arranged = order.arrange(runs(), seed=7, order=order.ROUNDS)
    assert sorted(r.key for r in arranged) == sorted(r.key for r in runs())
    reps = [order.repetition(r) for r in arranged]
    assert reps == sorted(reps)  # whole rounds, in order
    for k in range(1, 5):
        in_round = [r.cell for r in arranged if order.repetition(r) == k]
        transports = [c["transport"] for c in in_round]
        # the three kcp versions form one contiguous group within the round
        first = transports.index("kcp")
        assert transports[first : first + 3] == ["kcp"] * 3
    # Random within a round: the versions' order is not the same in every round.
    kcp_orders = {
        tuple(r.cell["library_version"] for r in arranged
              if order.repetition(r) == k and r.cell["transport"] == "kcp")
        for k in range(1, 5)
    }  # fmt: skip
    assert len(kcp_orders) > 1


def test_orders_are_seeded_and_shuffle_stays_the_default_order():
    a = order.arrange(runs(), seed=3, order=order.ROUNDS)
    assert [r.key for r in a] == [r.key for r in order.arrange(list(reversed(runs())), 3, "rounds")]
    s = order.arrange(runs(), seed=3)
    assert [r.key for r in s] == [r.key for r in order.arrange(runs(), 3, order.SHUFFLE)]
    # A shuffle does not keep rounds (with this seed, repetitions interleave).
    assert [order.repetition(r) for r in s] != sorted(order.repetition(r) for r in s)


def test_bad_order_and_run_id_are_named():
    with pytest.raises(ValueError, match="order 'sorted': expected one of shuffle, rounds"):
        order.arrange(runs(), 1, "sorted")
    bad = FakeRun({"cell_id": "c", "run_id": "x1"})
    with pytest.raises(ValueError, match="run c/x1: run_id 'x1': expected r<k>"):
        order.arrange([bad], 1, order.ROUNDS)


def test_the_nightly_runs_in_rounds_with_each_transports_versions_side_by_side():
    plan = expand("nightly")
    assert plan.order == order.ROUNDS and plan.to_doc()["order_name"] == "rounds"
    reps = [order.repetition(r) for r in plan.runs]
    assert reps == sorted(reps)
    # Within round 1, the cells of one context (e.g. kcp under callgrind) are contiguous.
    first = [order.context(r.cell) for r in plan.runs if order.repetition(r) == 1]
    runs_of = {c: [i for i, x in enumerate(first) if x == c] for c in set(first)}
    assert all(ix == list(range(ix[0], ix[0] + len(ix))) for ix in runs_of.values())
    assert max(len(ix) for ix in runs_of.values()) >= 2  # versions compared beside each other
    # The instructions block: every transport under callgrind at its fixed load.
    profiled = {r.cell["transport"] for r in plan.runs if r.cell.get("server_profiler")}
    assert profiled == {"tcp", "enet", "kcp", "quic", "ws", "webrtc"}


def test_rounds_replay_one_seed_per_context_and_a_shuffle_gives_every_run_its_own():
    cell_v1 = {"cell_id": "kcp-v1", "transport": "kcp", "players": 100, "library_version": "v1"}
    cell_v2 = cell_v1 | {"cell_id": "kcp-v2", "library_version": "v2"}
    other = cell_v1 | {"cell_id": "tcp-pinned", "transport": "tcp"}
    rounds = {
        order.seed_of(9, c, r, order.ROUNDS) for c in (cell_v1, cell_v2) for r in ("r1", "r2")
    }
    assert len(rounds) == 1  # both versions, every repetition: one workload
    assert order.seed_of(9, other, "r1", order.ROUNDS) not in rounds
    shuffled = {
        order.seed_of(9, c, r, order.SHUFFLE) for c in (cell_v1, cell_v2) for r in ("r1", "r2")
    }
    assert len(shuffled) == 4
    # The shuffle's seeds are those campaigns always had.
    assert order.seed_of(9, cell_v1, "r1", order.SHUFFLE) == order.run_seed(9, "kcp-v1", "r1")
