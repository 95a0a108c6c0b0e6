"""Where the game puts players and blocks (CONTRACT.md sections 4 and 5), checked on a client's
events.csv: the logs hold every position, so a prototype that spawns players elsewhere (two
players' towers in one cell) or builds somewhere else than its workload says is caught.

- spawn: player k at x = 2·(k mod 32) - 32, y = 0, z = 2·⌊k / 32⌋ - 32;
- active: the n-th block a player places (n = 0, 1, …) goes under its feet on its tower,
  (x, n, z) of its spawn point;
- rpc-toggle: a player places and removes, in turn, a block at (x + 1, 0, z) of its spawn point.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prototypes.contract.checklogs.rows import Report
from prototypes.contract.logs import parse_detail

# Positions are logged with %g or %d: integers for blocks, metres for the spawn.
_AXES = ("x", "y", "z")


def spawn_point(player: int) -> tuple[int, int, int]:
    """Where the server spawns player k (CONTRACT.md section 4)."""
    return 2 * (player % 32) - 32, 0, 2 * (player // 32) - 32


def _position(detail: str) -> tuple[float, float, float] | None:
    kv = parse_detail(detail)
    try:
        x, y, z = (float(kv[a]) for a in _AXES)
    except (KeyError, ValueError):
        return None
    return x, y, z


@dataclass(slots=True)
class Positions:
    """Collects the position events of one client's events.csv, then checks them (finish)."""

    name: str
    workload: str | None
    report: Report
    # player -> blocks placed so far (active) / the last action (rpc-toggle), for the order.
    placed: dict[int, int] = field(default_factory=dict)
    last_action: dict[int, str] = field(default_factory=dict)

    def event(self, lineno: int, player: int, event: str, detail: str) -> None:
        if event == "spawn":
            self._spawn(lineno, player, detail)
        elif event in ("block_place", "block_remove"):
            self._block(lineno, player, event, detail)

    def _spawn(self, lineno: int, player: int, detail: str) -> None:
        got = _position(detail)
        want = spawn_point(player)
        if got is None:
            self.report(self.name, lineno, f"spawn detail {detail!r} lacks x=… y=… z=… (metres)")
        elif got != tuple(float(v) for v in want):
            self.report(
                self.name,
                lineno,
                f"player {player} spawned at x={got[0]:g} y={got[1]:g} z={got[2]:g}, expected "
                f"x={want[0]} y={want[1]} z={want[2]} (x = 2·(k mod 32) - 32, y = 0, "
                "z = 2·⌊k / 32⌋ - 32, CONTRACT.md section 4)",
            )

    def _block(self, lineno: int, player: int, event: str, detail: str) -> None:
        got = _position(detail)
        if got is None or any(v != int(v) for v in got):
            self.report(self.name, lineno, f"{event} detail {detail!r} lacks integer x=… y=… z=…")
            return
        sx, _, sz = spawn_point(player)
        if self.workload == "active":
            if event != "block_place":
                self.report(self.name, lineno, "the active workload places blocks, it removes none")
                return
            n = self.placed.get(player, 0)
            self.placed[player] = n + 1
            want, rule = (sx, n, sz), f"its block {n} on the tower at its spawn point"
        elif self.workload == "rpc-toggle":
            previous = self.last_action.get(player, "block_remove")
            self.last_action[player] = event
            if previous == event:
                self.report(
                    self.name,
                    lineno,
                    f"player {player} logged {event} twice in a row: rpc-toggle places, then "
                    "removes, in turn",
                )
            want, rule = (sx + 1, 0, sz), "its spot 1 m beside its spawn point, (x + 1, 0, z)"
        else:
            return
        if tuple(int(v) for v in got) != want:
            self.report(
                self.name,
                lineno,
                f"player {player} {event.removeprefix('block_')}d a block at "
                f"x={int(got[0])} y={int(got[1])} z={int(got[2])}, expected "
                f"x={want[0]} y={want[1]} z={want[2]}: {rule} "
                f"(workload {self.workload}, CONTRACT.md section 5)",
            )
