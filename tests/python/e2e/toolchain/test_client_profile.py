"""Where a client's CPU goes (workflow/bench/client_profile.py): pprof's stacks sorted into named
buckets, and one real profiled cell of the reference prototype."""

from __future__ import annotations

import pytest

from tests.python.support.paths import REFERENCE_BINARY
from workflow.bench import client_profile as cp

TRACES = """File: netstick-ref
Type: cpu
Duration: 6s, Total samples = 1.5s (25.00%)
-----------+-------------------------------------------------------
     600ms   internal/runtime/syscall/linux.Syscall6
             syscall.Syscall
             golang.org/x/sys/unix.write
             golang.org/x/sys/unix.Write
             netstick/prototypes/reference/internal/transport/udp.(*cliConn).Send
-----------+-------------------------------------------------------
     300ms   internal/runtime/syscall/linux.Syscall6
             syscall.RawSyscall6
             netstick/prototypes/reference/internal/sched.EpollWaitUntil
             netstick/prototypes/reference/internal/transport/pollset.(*Set).Wait
-----------+-------------------------------------------------------
     100ms   runtime.futex
             runtime.futexsleep
             runtime.notesleep
             runtime.stopm
-----------+-------------------------------------------------------
     200ms   github.com/xtaci/kcp-go/v5.(*KCP).flush
             github.com/xtaci/kcp-go/v5.(*UDPSession).update
-----------+-------------------------------------------------------
     100ms   runtime.findRunnable
             runtime.schedule
-----------+-------------------------------------------------------
     100ms   runtime.mallocgc
             runtime.newobject
             netstick/prototypes/reference/internal/client.(*player).sendProbe
-----------+-------------------------------------------------------
      50ms   runtime.cgocall
             netstick/prototypes/reference/internal/transport/enet._Cfunc_ns_send
-----------+-------------------------------------------------------
      50ms   netstick/prototypes/reference/internal/client.(*player).echo
-----------+-------------------------------------------------------
"""


def test_stacks_are_sorted_into_buckets_from_the_innermost_frame() -> None:
    samples = cp.parse_traces(TRACES)
    assert [s for s, _ in samples] == pytest.approx([0.6, 0.3, 0.1, 0.2, 0.1, 0.1, 0.05, 0.05])
    assert [cp.classify(f) for _, f in samples] == [
        "kernel_send", "kernel_receive", "kernel_sleep", "library", "go_scheduler",
        "go_gc_alloc", "library_c", "prototype",
    ]  # fmt: skip
    got = cp.shares(samples)
    assert got["sampled_cpu_s"] == 1.5
    assert got["shares"]["kernel_send"] == 0.4
    assert sum(got["shares"].values()) == pytest.approx(1.0, abs=0.01)
    assert got["top_leaf_functions"][0] == {
        "function": "internal/runtime/syscall/linux.Syscall6",
        "share": 0.6,
    }


def test_a_sample_value_that_is_no_duration_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'12apples' is not a duration"):
        cp.parse_traces("-----------+---\n   12apples   runtime.main\n")


def test_a_real_client_is_profiled_and_its_shares_named() -> None:
    if not REFERENCE_BINARY.is_file():
        pytest.skip("the reference prototype is not built (make build)")
    got = cp.profile(
        REFERENCE_BINARY, "udp", 20, {"size": 100, "rate": 60}, pin=False, duration_s=2.0
    )
    assert "skipped" not in got, got
    assert got["sampled_cpu_s"] > 0
    assert set(got["shares"]) == set(cp.BUCKETS)
    # udp's client sends and receives with system calls of its own: they must be seen.
    assert got["shares"]["kernel_send"] + got["shares"]["kernel_receive"] > 0.2, got
    text = cp.profiles_text({"udp": got, "kcp": {"skipped": "no go command"}})
    assert "udp     kernel_" in text and "kcp     skipped: no go command" in text
    table = cp.profiles_markdown({"udp": got, "kcp": {"skipped": "no go command"}})
    assert table.splitlines()[0].startswith("| transport | sampled CPU s | kernel_send")
    assert "| kcp | skipped |" in table
