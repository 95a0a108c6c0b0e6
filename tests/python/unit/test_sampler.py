"""monitors.sampler in this process: every sample flushed, a fixed grid, names refused, the
command line's refusal of a missing pid, and reading monitor.csv back."""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest

from monitors import sampler as sampler_mod
from monitors.sampler import CSV_COLUMNS, HOST, SAMPLER, Sampler


def test_flushes_every_sample(tmp_path: Path) -> None:
    out = tmp_path / "monitor.csv"
    with Sampler({"self": psutil.Process().pid}, out, interval_s=0.1):
        time.sleep(0.35)
        lines_early = len(out.read_text().splitlines())
        time.sleep(0.3)
        lines_later = len(out.read_text().splitlines())
        assert out.read_text().endswith("\n")  # only whole lines on disk
    # header + 3 rows per sample (self, host, sampler)
    assert lines_early >= 1 + 3 * 2
    assert lines_later >= lines_early + 3 * 2


def test_sampler_keeps_a_fixed_grid() -> None:
    with Sampler({}, None, interval_s=0.05, sample_host=False) as s:
        time.sleep(0.53)
    times = [r.t_unix_ns for r in s.samples(SAMPLER)][:-1]  # the last one is taken at stop()
    # Deadlines are absolute: samples sit on a 50 ms grid, not 50 ms + sampling time apart.
    assert len(times) >= 9
    mean_gap_s = (times[-1] - times[0]) / 1e9 / (len(times) - 1)
    assert abs(mean_gap_s - 0.05) < 0.003


def test_rejects_bad_names() -> None:
    with pytest.raises(ValueError, match="comma"):
        Sampler({"a,b": 1})
    with pytest.raises(ValueError, match="host"):
        Sampler({HOST: 1})


def test_cli_rejects_missing_pid(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        sampler_mod.main(["--pid", "x=999999999", "--out", str(tmp_path / "m.csv")])
    assert exc.value.code == 2


def test_read_monitor_reads_what_was_written_and_a_node_csv_replaces_its_process(
    tmp_path: Path,
) -> None:
    from monitors.sampler import MONITOR_CSV, Sample, node_csv, read_monitor, read_samples

    local = [
        Sample(1, "server", 0.5, 0.25, 1.0, 100, 3),
        Sample(1, "client-0", 0.1, 0.0, 0.2, 50, 2),
        Sample(1, HOST, 9.0, 1.0, 1.5, 4000, None),
    ]
    header = ",".join(CSV_COLUMNS) + "\n"
    (tmp_path / MONITOR_CSV).write_text(header + "".join(s.csv_line() for s in local))
    assert read_samples(tmp_path / MONITOR_CSV) == local
    remote = Sample(2, "server", 0.75, 0.25, 0.9, 120, 5)  # the server sampled on its node
    node_csv(tmp_path, "server").write_text(header + remote.csv_line())
    assert read_monitor(tmp_path) == [local[1], local[2], remote]
