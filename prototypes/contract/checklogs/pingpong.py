"""The pingpong workload's rules (CONTRACT.md section 5), checked on a client's net rows in
rtt.csv: a player sends a probe, waits for its echo, sends the next, `count` times, with no
lateness (nothing is scheduled). A prototype that keeps the periodic probes, sends on a timer
or lets two probes fly at once measures another thing than a round trip at a time, and its
rows show it:

- send_late_us is empty on every net row;
- at most `count` net rows per player;
- no probe goes out before the previous one's echo came back (or was given up after the 5 s
  loss timeout): t(seq + 1) >= t(seq) + min(rtt(seq), 5 s), within CLOCK_SLACK_NS;
- the next probe follows the echo at once: the median time from an echo to the next send, per
  player, is at most NEXT_AFTER_ECHO_MAX_NS (a sender on a timer waits its period instead).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from prototypes.contract.checklogs.rows import Report

LOSS_TIMEOUT_NS = 5_000_000_000  # CONTRACT.md 3.3: a probe unanswered after 5 s is lost
# t_unix_ns is a wall-clock read and rtt_us a monotonic difference: they may disagree by a
# clock read or two, far below any round trip the rule is about.
CLOCK_SLACK_NS = 1_000_000
# The echo path sends the next probe: scheduling delays it by microseconds to a few ms on a
# loaded machine; a sender on a timer slower than 50 Hz waits longer than this on most probes.
NEXT_AFTER_ECHO_MAX_NS = 20_000_000
DEFAULT_COUNT = 1000


@dataclass(slots=True)
class Pingpong:
    """Collects one client's net rows under the pingpong workload, then checks them (finish)."""

    name: str
    count: int
    report: Report
    # player -> seq -> (t_unix_ns, rtt_ns, line)
    rows: dict[int, dict[int, tuple[int, int, int]]] = field(default_factory=dict)
    late_lines: list[int] = field(default_factory=list)

    @classmethod
    def for_params(cls, name: str, params: dict[str, str], report: Report) -> Pingpong:
        text = params.get("count", str(DEFAULT_COUNT))
        return cls(name, int(text) if text.isdigit() else DEFAULT_COUNT, report)

    def row(self, lineno: int, player: int, seq: int, t_ns: int, rtt_ns: int, late: str) -> None:
        if late:
            self.late_lines.append(lineno)
        self.rows.setdefault(player, {})[seq] = (t_ns, rtt_ns, lineno)

    def finish(self) -> None:
        if self.late_lines:
            self.report(
                self.name,
                self.late_lines[0],
                f"{len(self.late_lines)} net row(s) of the pingpong workload have a "
                "send_late_us, the first here: pingpong probes are not scheduled, so "
                "send_late_us is empty (CONTRACT.md sections 3.2 and 5)",
            )
        for player, by_seq in sorted(self.rows.items()):
            self._player(player, by_seq)

    def _player(self, player: int, by_seq: dict[int, tuple[int, int, int]]) -> None:
        if len(by_seq) > self.count:
            line = sorted(by_seq.values(), key=lambda r: r[2])[self.count][2]
            self.report(
                self.name,
                line,
                f"player {player} has {len(by_seq)} pingpong net rows, more than count="
                f"{self.count}: a player sends count probes, then no more",
            )
        gaps: list[int] = []
        for seq in sorted(by_seq):
            after = by_seq.get(seq + 1)
            if after is None:
                continue
            t, rtt, _ = by_seq[seq]
            returned = t + min(rtt, LOSS_TIMEOUT_NS)
            if after[0] < returned - CLOCK_SLACK_NS:
                self.report(
                    self.name,
                    after[2],
                    f"player {player}'s probe seq {seq + 1} went out "
                    f"{(returned - after[0]) / 1e6:.1f} ms before the echo of seq {seq} came "
                    "back: pingpong has one probe in flight at a time (CONTRACT.md section 5)",
                )
                return
            if rtt < LOSS_TIMEOUT_NS:
                gaps.append(after[0] - returned)
        if len(gaps) >= 10 and (median := statistics.median(gaps)) > NEXT_AFTER_ECHO_MAX_NS:
            self.report(
                self.name,
                min(r[2] for r in by_seq.values()),
                f"player {player} sent its next pingpong probe a median {median / 1e6:.1f} ms "
                f"after the echo (over {len(gaps)} probes), more than "
                f"{NEXT_AFTER_ECHO_MAX_NS / 1e6:g} ms: the next probe goes out when the echo "
                "arrives, not on a timer (CONTRACT.md section 5)",
            )
