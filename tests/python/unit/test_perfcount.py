"""Hardware instruction counters (monitors/perfcount.py): perf stat's answer read, and this
machine's status asked of the real perf."""

from __future__ import annotations

import shutil

import pytest

from monitors import perfcount


def test_a_count_and_perfs_reasons_for_none_are_read_from_its_csv() -> None:
    assert perfcount.parse_stat_csv("123456,,instructions:u,1000,100.00,,\n") == 123456
    text = "<not supported>,,instructions:u,0,100.00,,\n"
    assert perfcount.parse_stat_csv(text) == "<not supported>"
    assert perfcount.parse_stat_csv("<not counted>,,cycles,0,0.00,,", "cycles") == "<not counted>"
    with pytest.raises(ValueError, match="no line for event instructions:u"):
        perfcount.parse_stat_csv("Error:\nAccess to performance monitoring is limited\n")
    with pytest.raises(ValueError, match="count 'x1' of instructions:u: not a number"):
        perfcount.parse_stat_csv("x1,,instructions:u,0,100.00,,")


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_this_machine_says_whether_it_counts_instructions_and_why_not() -> None:
    got = perfcount.status()
    assert got["event"] == "instructions:u"
    # Either a counter is there, or the reason names perf's answer (this VM: <not supported>).
    assert got["available"] == (got["reason"] is None)
    if not got["available"]:
        assert "perf" in got["reason"]
