"""bench-faults: a drill that injects faults into short campaigns of the reference prototype and
counts what held (data/bench/faults.json).

Each fault is injected once into its own small campaign, in its own directory:

- ``workflow_sigkill``: Snakemake killed with SIGKILL mid-run (an OOM kill, a lost SSH session)
  while its job goes on; ``--unlock`` and a restart must wait for the orphaned run instead of
  measuring beside it, and never let a stale process overwrite a record;
- ``group_sigint``: SIGINT to Snakemake's whole process group, then a restart;
- ``server_sigkill``: the server killed with SIGKILL inside the measurement window;
- ``player_sigstop``: a player process stopped with SIGSTOP inside the window;
- ``server_sigstop``: the server frozen with SIGSTOP for 3 s inside the window, then let go: the
  run ends ok and must be flagged stalled (stats.stalls), never counted as an ordinary run;
- ``disk_full``: the data directory on a small tmpfs, full before a run and during one;
- ``bad_defaults``: ``duration_s: "ten"`` and ``"10"`` in a campaign's defaults;
- ``group_sigkill``: SIGKILL to Snakemake's whole process group mid-run: the killed run's work
  directory is listed as stale by ``campaign status`` and set aside by the restart;
- ``reset_failed``: a failed run in a campaign whose report exists is run again after
  ``campaign reset-failed`` and the same start, and the report renewed;
- ``bad_campaign_input``: a key given twice, ``--repetitions 0``, ``--duration-s 0`` and a
  100-hour campaign without ``budget_min``, each refused naming what.

Per fault the drill records the status it expected and the one it got, the processes and
network namespaces left behind (orphans), and the finished runs lost or changed (their record
and run directory hashed before the fault and after the recovery: scratch.finished). Each
campaign runs in a scratch directory of its own (scratch.py). The tests in
tests/python/e2e/workflow/test_faults.py call the same functions and assert each outcome.

    netstick bench faults   -> data/bench/faults.json
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from stats import runs_table
from workflow import layout
from workflow.bench import options, record, scratch
from workflow.bench.scratch import finished, lost_and_changed
from workflow.bench.targets import target_rows, targets_text
from workflow.campaign import expand as campaigns
from workflow.campaign import progress
from workflow.files import REPO
from workflow.harness import netns

REFERENCE = REPO / "prototypes" / "reference" / "prototype.yaml"
NETSTICK = Path(sys.executable).with_name("netstick")
WAIT_S = 120.0  # the longest any step of the drill waits for a campaign to get somewhere


@dataclass
class FaultResult:
    """What one injected fault did."""

    fault: str
    expected: str
    observed: str
    correct: bool
    orphans: list[str] = field(default_factory=list)
    runs_lost: int = 0
    runs_changed: int = 0
    seconds: float = 0.0
    notes: dict[str, Any] = field(default_factory=dict)

    def to_doc(self) -> dict[str, Any]:
        return asdict(self)


# -- the campaign under test ------------------------------------------------------------------


def campaign_file(
    root: Path, name: str, *, repetitions: int, duration_s: float, defaults: Any = None
) -> Path:
    """A one-cell campaign of the reference prototype over TCP, 2 idle players."""
    doc = scratch.campaign_doc(
        name,
        f"fault drill: {name}",
        {"name": "reference", "manifest": str(REFERENCE), "transports": ["tcp"]},
        block="drill",
        seed=11,
        repetitions=repetitions,
        defaults=(
            defaults
            if defaults is not None
            else {"duration_s": duration_s, "network_profile": "lan", "baseline_s": 0}
        ),
    )
    return scratch.campaign_file(root, doc)


def _snakemake(root: Path, campaign: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return scratch.run(root, campaign, *extra, config=["retries=0"], timeout_s=900)


def _snakemake_popen(root: Path, campaign: Path) -> subprocess.Popen[str]:
    # Its own process group: the drill signals it alone.
    return scratch.popen(root, campaign, config=["retries=0"], log=root / "snakemake-1.log")


def _planned(root: Path, campaign: Path) -> tuple[Path, list[str]]:
    """The campaign's plan.json written under root/data as the workflow writes it, and its run
    keys in run order (r1, r2, ...)."""
    plan = campaigns.plan(campaign)
    path = progress.write_plan(plan, root / "data" / "raw")
    return path, [r.key for r in sorted(plan.runs, key=lambda r: r.run_id)]


def _run_one(plan: Path, key: str) -> subprocess.Popen[str]:
    """One run of the plan as a Snakemake job runs it, attempt 1 of 2."""
    return subprocess.Popen(
        [str(NETSTICK), "campaign", "run-one", str(plan), key, "--attempt", "1", "--attempts", "2"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip


def _raw(root: Path, campaign: Path) -> Path:
    return root / "data" / "raw" / campaign.stem


def _in_flight(raw: Path) -> list[Path]:
    return sorted(raw.glob(f"*/.r*{layout.WORK_MARK}*"))


def _wait(what: str, done: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"fault drill: {what} did not happen within {timeout_s:g} s")
        time.sleep(0.1)


def orphans(root: Path) -> list[str]:
    """Processes of the drill's directory still alive, and sandboxes left behind."""
    mine = {os.getpid(), *(p.pid for p in psutil.Process().children(recursive=True))}
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        alive = proc.info["status"] != psutil.STATUS_ZOMBIE
        if str(root) in cmd and proc.info["pid"] not in mine and alive:
            found.append(f"pid {proc.info['pid']}: {cmd[:160]}")
    return found + _sandboxes_left(root)


def _sandboxes_left(root: Path) -> list[str]:
    """Network namespaces and links left by the drill's runs (named by their run's short id:
    another program's sandboxes on this machine are not the drill's)."""
    from workflow.harness import sandbox

    # r1, r1.json, r1.failed, .r1.lock, .r1.tmp-<pid>: all of run r1.
    shorts = {
        sandbox.short_id(f"{cell.name}/{run.name.lstrip('.').split('.')[0]}")
        for cell in root.rglob("data/raw/*/*")
        if cell.is_dir()
        for run in cell.iterdir()
    }
    return [name for name in netns.leftovers() if any(f"-{s}-" in name for s in shorts)]


def windows_overlap(raw: Path) -> list[str]:
    """Pairs of ok runs whose measurement windows overlapped (they shared the machine)."""
    spans = []
    for meta_path in sorted(raw.glob("*/r*/meta.json")):
        meta = json.loads(meta_path.read_text())
        start, end = meta.get("window_start_unix_ns"), meta.get("window_end_unix_ns")
        if start and end:
            spans.append((start, end, meta_path.parent.name))
    spans.sort()
    return [
        f"{a[2]} and {b[2]} by {(a[1] - b[0]) / 1e9:.2f} s"
        for a, b in itertools.pairwise(spans)
        if b[0] < a[1]
    ]


def _processes(root: Path, marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if marker in cmd and any(str(root) in part for part in cmd):
            found.append(proc)
    return found


# -- the faults -------------------------------------------------------------------------------


def _interrupt_mid_run(
    root: Path, name: str, sig: signal.Signals, *, group: bool
) -> tuple[Path, Path, dict[str, dict[str, str]]]:
    """A 3-run campaign under Snakemake, signalled (its whole process group, or Snakemake
    alone) once a first run finished and a second is in flight, and waited for; the campaign
    file, its raw directory and the finished runs' hashes from before the signal."""
    camp = campaign_file(root, name, repetitions=3, duration_s=3)
    raw = _raw(root, camp)
    proc = _snakemake_popen(root, camp)
    _wait("a first record", lambda: len(scratch.records(raw)) >= 1 or proc.poll() is not None)
    _wait("a second run in flight", lambda: bool(_in_flight(raw)) or proc.poll() is not None)
    before = finished(raw)
    if group:
        os.killpg(proc.pid, sig)
    else:
        os.kill(proc.pid, sig)
    proc.wait(timeout=60)
    return camp, raw, before


def workflow_sigkill(root: Path) -> FaultResult:
    """SIGKILL to Snakemake alone while a run is in flight; unlock and restart."""
    t0 = time.monotonic()
    # Snakemake alone: its job goes on, orphaned.
    camp, raw, before = _interrupt_mid_run(root, "drill-sigkill", signal.SIGKILL, group=False)
    orphaned_job = bool(_in_flight(raw))
    unlock = _snakemake(root, camp, "--unlock")
    res = _snakemake(root, camp)
    (root / "snakemake-2.log").write_text(res.stdout + res.stderr)
    recs = scratch.records(raw)
    overlaps = windows_overlap(raw)
    lost, changed = lost_and_changed(before, finished(raw))
    ok = sum(1 for r in recs.values() if r.get("status") == "ok")
    correct = unlock.returncode == 0 and res.returncode == 0 and ok == 3 and not overlaps
    return FaultResult(
        "workflow_sigkill",
        expected="restart waits for the orphaned run: 3 of 3 ok, no overlapping windows",
        observed=f"{ok} of 3 ok; overlapping windows: {overlaps or 'none'}; "
        f"restart exit {res.returncode}",
        correct=correct,
        orphans=orphans(root),
        runs_lost=lost,
        runs_changed=changed,
        seconds=round(time.monotonic() - t0, 1),
        notes={"job_outlived_snakemake": orphaned_job},
    )


def group_sigint(root: Path) -> FaultResult:
    """SIGINT to Snakemake's process group mid-run; restart."""
    t0 = time.monotonic()
    camp, raw, before = _interrupt_mid_run(root, "drill-sigint", signal.SIGINT, group=True)
    left_after_stop = orphans(root)
    res = _snakemake(root, camp)
    (root / "snakemake-2.log").write_text(res.stdout + res.stderr)
    recs = scratch.records(raw)
    ok = sum(1 for r in recs.values() if r.get("status") == "ok")
    lost, changed = lost_and_changed(before, finished(raw))
    return FaultResult(
        "group_sigint",
        expected="a clean stop, then the restart completes: 3 of 3 ok",
        observed=f"{ok} of 3 ok after the restart (exit {res.returncode})",
        correct=res.returncode == 0 and ok == 3 and not left_after_stop,
        orphans=left_after_stop + orphans(root),
        runs_lost=lost,
        runs_changed=changed,
        seconds=round(time.monotonic() - t0, 1),
    )


def group_sigkill(root: Path) -> FaultResult:
    """SIGKILL to Snakemake's whole process group mid-run (`kill -9 -- -PGID`): the run's own
    harness dies too and leaves its work directory; `campaign status` must list it as stale and
    the restart must set it aside among the run's failed attempts and finish every run."""
    t0 = time.monotonic()
    camp, raw, before = _interrupt_mid_run(root, "drill-group-kill", signal.SIGKILL, group=True)
    _wait("the killed processes gone", lambda: not _processes(root, "run-one"), timeout_s=30)
    left = [p.name for p in _in_flight(raw)]
    status = subprocess.run(
        [str(NETSTICK), "campaign", "status", str(camp), "--data-dir", str(root / "data")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    _snakemake(root, camp, "--unlock")
    res = _snakemake(root, camp)
    (root / "snakemake-2.log").write_text(res.stdout + res.stderr)
    recs = scratch.records(raw)
    ok = sum(1 for r in recs.values() if r.get("status") == "ok")
    set_aside = sorted(p.name for p in raw.glob(f"*/*{layout.FAILED_SUFFIX}/*-stale*"))
    lost, changed = lost_and_changed(before, finished(raw))
    listed = "1 stale" in status.stdout
    correct = bool(left) and listed and ok == 3 and not _in_flight(raw) and bool(set_aside)
    return FaultResult(
        "group_sigkill",
        expected="the killed run's work directory listed as stale, set aside by the restart; "
        "3 of 3 ok",
        observed=f"left {len(left)} work directory; status lists it: {listed}; {ok} of 3 ok "
        f"after the restart (exit {res.returncode}); set aside: {len(set_aside)}; in flight "
        f"after: {len(_in_flight(raw))}",
        correct=correct,
        orphans=orphans(root),
        runs_lost=lost,
        runs_changed=changed,
        seconds=round(time.monotonic() - t0, 1),
        notes={"left": left, "status": status.stdout.strip().splitlines()[-3:]},
    )


def reset_failed(root: Path) -> FaultResult:
    """A run failed (its server killed with SIGKILL in the window, retries=0) in a campaign
    whose report was then built; `netstick campaign reset-failed` and the same start again must
    run it (not "Nothing to be done") and renew the report."""
    t0 = time.monotonic()
    camp = campaign_file(root, "drill-reset", repetitions=2, duration_s=3)
    raw = _raw(root, camp)
    proc = _snakemake_popen(root, camp)
    _wait("a first record", lambda: len(scratch.records(raw)) >= 1 or proc.poll() is not None)
    _wait("the second run's server", lambda: bool(_processes(root, "server")) or proc.poll()
          is not None)  # fmt: skip
    time.sleep(1.5)  # inside its window (connect well under 1 s)
    for server in _processes(root, "server"):
        with contextlib.suppress(psutil.Error):
            server.kill()
    proc.wait(timeout=600)
    report = root / "report" / camp.stem / "index.html"  # report_dir of the scratch campaign
    failed_first = [k for k, r in scratch.records(raw).items() if r.get("status") == "failed"]
    built_at = report.stat().st_mtime if report.exists() else None
    before = finished(raw)
    reset = subprocess.run(
        [str(NETSTICK), "campaign", "reset-failed", str(camp), "--data-dir", str(root / "data")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    res = _snakemake(root, camp)
    (root / "snakemake-2.log").write_text(res.stdout + res.stderr)
    ok = sum(1 for r in scratch.records(raw).values() if r.get("status") == "ok")
    renewed = built_at is not None and report.exists() and report.stat().st_mtime > built_at
    nothing = "Nothing to be done" in res.stdout + res.stderr
    lost, changed = lost_and_changed(
        {k: v for k, v in before.items() if k not in failed_first}, finished(raw)
    )
    correct = (
        len(failed_first) == 1 and reset.returncode == 0 and ok == 2 and renewed and not nothing
    )
    return FaultResult(
        "reset_failed",
        expected="1 run failed and the report built; after reset-failed the restart runs it: "
        "2 of 2 ok, the report renewed",
        observed=f"failed first: {len(failed_first)}; report built: {built_at is not None}; "
        f"reset exit {reset.returncode}; after the restart {ok} of 2 ok, report renewed: "
        f"{renewed}, 'Nothing to be done': {nothing}",
        correct=correct,
        orphans=orphans(root),
        runs_lost=lost,
        runs_changed=changed,
        seconds=round(time.monotonic() - t0, 1),
        notes={"reset": reset.stdout.strip()},
    )


def _signal_in_window(
    root: Path,
    name: str,
    marker: str,
    sig: int,
    *,
    duration_s: float = 6,
    resume_after_s: float | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run one run through `campaign run-one` and send sig to its process marked by marker
    (``server`` or ``client``) two seconds into the window (and SIGCONT resume_after_s later);
    its record and what happened: the victims, run-one's exit and stderr, the run's directory."""
    camp = campaign_file(root, name, repetitions=1, duration_s=duration_s)
    raw = _raw(root, camp)
    plan, (key,) = _planned(root, camp)
    proc = _run_one(plan, key)
    _wait(
        "the players connected",
        lambda: (
            any(raw.glob(f"*/.r1{layout.WORK_MARK}*/logs/client-0.rtt.csv"))
            or proc.poll() is not None
        ),
    )
    time.sleep(2.0)
    victims = _processes(root, marker)
    for victim in victims:
        with contextlib.suppress(psutil.Error):
            victim.send_signal(sig)
    if resume_after_s is not None:
        time.sleep(resume_after_s)
        for victim in victims:
            with contextlib.suppress(psutil.Error):
                victim.send_signal(signal.SIGCONT)
    _out, err = proc.communicate(timeout=WAIT_S)
    rec = scratch.records(raw).get(key, {})
    return rec, {
        "victims": len(victims),
        "exit": proc.returncode,
        "stderr": err[-2000:],
        "run_dir": raw / key,
    }


def server_sigkill(root: Path) -> FaultResult:
    t0 = time.monotonic()
    rec, seen = _signal_in_window(root, "drill-server-kill", "server", signal.SIGKILL)
    status_doc = _attempt_status(root, "drill-server-kill")
    codes = status_doc.get("exit_codes", {})
    correct = (
        seen["victims"] >= 1
        and rec.get("status") is None  # attempt 1 of 2 failed: retried, no record yet
        and status_doc.get("reason") == "server_exit"
        and codes.get("server") == -signal.SIGKILL
    )
    return FaultResult(
        "server_sigkill",
        expected="attempt failed as server_exit with the server's exit code -9 on record",
        observed=f"reason {status_doc.get('reason')}, exit codes {codes}",
        correct=correct,
        orphans=orphans(root),
        seconds=round(time.monotonic() - t0, 1),
    )


def player_sigstop(root: Path) -> FaultResult:
    t0 = time.monotonic()
    _rec, seen = _signal_in_window(root, "drill-player-stop", "client", signal.SIGSTOP)
    status_doc = _attempt_status(root, "drill-player-stop")
    correct = seen["victims"] >= 1 and status_doc.get("reason") == "timeout"
    return FaultResult(
        "player_sigstop",
        expected="attempt failed as timeout, the stopped player killed",
        observed=f"reason {status_doc.get('reason')}, exit codes {status_doc.get('exit_codes')}",
        correct=correct,
        orphans=orphans(root),
        seconds=round(time.monotonic() - t0, 1),
    )


STOP_S = 3.0  # how long the server is frozen: three times stats.stalls.STALL_S


def server_sigstop(root: Path) -> FaultResult:
    """The server frozen (SIGSTOP) for STOP_S inside the window, then let go (SIGCONT): the run
    ends ok, and its row of the runs table must say it stalled and why; before stats.stalls it
    entered the statistics as an ordinary run."""
    t0 = time.monotonic()
    rec, seen = _signal_in_window(
        root, "drill-server-stop", "server", signal.SIGSTOP, duration_s=8, resume_after_s=STOP_S
    )
    row: dict[str, Any] = {}
    if rec.get("status") == "ok":
        row = runs_table.measure(runs_table.read_run_dir(seen["run_dir"]))
    gap = row.get("tick_gap_max_s") or 0.0
    correct = seen["victims"] >= 1 and rec.get("status") == "ok" and row.get("stalled") is True
    return FaultResult(
        "server_sigstop",
        expected=f"run ok, flagged stalled: no server tick for about {STOP_S:g} s in the window",
        observed=(
            f"status {rec.get('status')}, stalled {row.get('stalled')}, largest tick gap "
            f"{gap:.2f} s, probe silence {row.get('probe_silence_max_s')} s: "
            f"{row.get('stall_reason')}"
        ),
        correct=correct,
        orphans=orphans(root),
        seconds=round(time.monotonic() - t0, 1),
    )


def _attempt_status(root: Path, name: str) -> dict[str, Any]:
    return _last_attempt(layout.campaign_dir(name, root / "data" / "raw"), "r1")


def _last_attempt(raw: Path, run_id: str) -> dict[str, Any]:
    """The status.json of the last failed attempt of run run_id the harness kept, or {}."""
    attempts = [a for cell in sorted(raw.glob("*/")) for a in layout.failed_attempts(cell / run_id)]
    return (attempts[-1].status or {}) if attempts else {}


def disk_full(root: Path) -> FaultResult:
    """The data directory on a small tmpfs: full before a run, then filled during one."""
    t0 = time.monotonic()
    disk = root / "disk"
    disk.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(disk)], check=True)
    try:
        camp = campaign_file(root, "drill-disk", repetitions=3, duration_s=4)
        plan, keys = _planned(disk, camp)
        raw = disk / "data" / "raw" / camp.stem
        first = _run_one(plan, keys[0])
        first.communicate(timeout=WAIT_S)
        before = finished(raw)
        filler = disk / "filler"
        _fill(filler)
        full_before = _run_one(plan, keys[1])
        _, err_before = full_before.communicate(timeout=WAIT_S)
        filler.unlink()
        during = _run_one(plan, keys[2])
        _wait(
            "the third run's players connected",
            lambda: (
                any(raw.glob(f"*/.r3{layout.WORK_MARK}*/logs/client-0.rtt.csv"))
                or during.poll() is not None
            ),
        )
        _fill(filler)
        _, err_during = during.communicate(timeout=WAIT_S)
        filler.unlink()
        during_reason = _last_attempt(raw, "r3").get("reason")
        leaked = [str(p) for p in _in_flight(raw)]
        recs = scratch.records(raw)
        lost, changed = lost_and_changed(before, finished(raw))
        rec3 = recs.get(keys[2])
        # Removing the attempt's partial files frees space: its record usually fits, and says
        # disk_full; where even that does not fit, run-one exits 1 without one.
        during_ok = (
            during.returncode == 0
            and rec3 is not None
            and rec3["status"] == "failed"
            and rec3["reason"] == "disk_full"
            and rec3["not_retried"] is not None
        ) or (during.returncode == 1 and rec3 is None)
        correct = (
            full_before.returncode == 1
            and keys[1] not in recs
            and "disk full" in err_before
            and during_ok
            and during_reason == "disk_full"
            and not leaked
        )
        return FaultResult(
            "disk_full",
            expected="full before: exit 1 at once, nothing written; full during: attempt "
            "disk_full, not retried, its partial files removed",
            observed=f"before: exit {full_before.returncode}; during: exit {during.returncode}, "
            f"attempt {during_reason}, record {(rec3 or {}).get('reason')}; leaked temporary "
            f"directories {len(leaked)}",
            correct=correct,
            orphans=orphans(root),
            runs_lost=lost,
            runs_changed=changed,
            seconds=round(time.monotonic() - t0, 1),
            notes={
                "stderr_before": err_before.strip()[-300:],
                "stderr_during": err_during.strip()[-300:],
            },
        )
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _fill(path: Path) -> None:
    """Write zeros until the file system is full."""
    with path.open("wb") as f, contextlib.suppress(OSError):
        block = b"\0" * (1 << 20)
        while True:
            f.write(block)
            f.flush()


def bad_defaults(root: Path) -> FaultResult:
    t0 = time.monotonic()
    seen = {}
    for value in ("ten", "10"):
        camp = campaign_file(
            root, f"drill-defaults-{value}", repetitions=1, duration_s=1,
            defaults={"duration_s": value},
        )  # fmt: skip
        res = subprocess.run(
            [str(NETSTICK), "campaign", "plan", str(camp)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        seen[value] = (res.returncode, res.stderr.strip())
    correct = all(
        code == 2 and "key defaults.duration_s: expected a number" in err and "Traceback" not in err
        for code, err in seen.values()
    )
    return FaultResult(
        "bad_defaults",
        expected='exit 2 naming key defaults.duration_s for "ten" and "10"',
        observed="; ".join(f"{v!r}: exit {c}" for v, (c, _) in seen.items()),
        correct=correct,
        seconds=round(time.monotonic() - t0, 1),
        notes={v: err for v, (_, err) in seen.items()},
    )


def bad_campaign_input(root: Path) -> FaultResult:
    """What the drill found accepted: a key given twice in a campaign file, zero overrides, and
    a campaign of about 100 hours without budget_min. Each must be refused, naming what."""
    t0 = time.monotonic()
    seen: dict[str, tuple[int, str]] = {}
    camp = campaign_file(root, "drill-input", repetitions=1, duration_s=8)
    text = camp.read_text()
    twice = camp.with_name("drill-input-twice.yaml")
    twice.write_text(text.replace("  duration_s: 8", "  duration_s: 8\n  duration_s: 3600", 1))

    def plan(name: str, path: Path, *extra: str) -> None:
        res = subprocess.run(
            [str(NETSTICK), "campaign", "plan", str(path), *extra],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        seen[name] = (res.returncode, res.stderr.strip())

    plan("duplicate_key", twice)
    plan("repetitions_0", camp, "--repetitions", "0")
    plan("duration_0", camp, "--duration-s", "0")
    long = campaign_file(root, "drill-input-long", repetitions=100, duration_s=3600)
    dry = scratch.run(root, long, "-n", timeout_s=120)
    seen["100_hours"] = (dry.returncode, (dry.stdout + dry.stderr).strip()[-600:])
    words = {
        "duplicate_key": "duration_s",
        "repetitions_0": "repetitions",
        "duration_0": "duration_s",
        "100_hours": "sets no budget_min",
    }
    held = {
        name: code != 0 and words[name] in err and "Traceback" not in err
        for name, (code, err) in seen.items()
    }
    return FaultResult(
        "bad_campaign_input",
        expected="each refused naming what: a duplicate key, --repetitions 0, --duration-s 0, "
        "a 100-hour campaign without budget_min",
        observed="; ".join(f"{n}: exit {c}" for n, (c, _) in seen.items()),
        correct=all(held.values()),
        seconds=round(time.monotonic() - t0, 1),
        notes={n: err[-400:] for n, (_, err) in seen.items()},
    )


FAULTS: dict[str, Callable[[Path], FaultResult]] = {
    "workflow_sigkill": workflow_sigkill,
    "group_sigint": group_sigint,
    "server_sigkill": server_sigkill,
    "player_sigstop": player_sigstop,
    "server_sigstop": server_sigstop,
    "disk_full": disk_full,
    "bad_defaults": bad_defaults,
    "group_sigkill": group_sigkill,
    "reset_failed": reset_failed,
    "bad_campaign_input": bad_campaign_input,
}


def run(out: Path, repo: Path, *, progress: Callable[[str], None] = print) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    root = repo / "data" / "bench-runs" / f"faults-{stamp}"
    results = []
    for name, inject in FAULTS.items():
        progress(f"injecting {name}")
        res = inject(root / name)
        progress(f"  {'held' if res.correct else 'FAILED'}: {res.observed}")
        results.append(res.to_doc())
    measured = {
        "faults_injected": len(results),
        "correct_statuses": sum(1 for r in results if r["correct"]),
        "orphans": sum(len(r["orphans"]) for r in results),
        "runs_lost": sum(r["runs_lost"] for r in results),
        "runs_changed": sum(r["runs_changed"] for r in results),
    }
    targets = {
        "correct_statuses": (">=", float(len(results)), "every fault ends in its expected status"),
        "orphans": ("<=", 0.0, "processes or namespaces left behind"),
        "runs_lost": ("<=", 0.0, "finished runs lost"),
        "runs_changed": ("<=", 0.0, "finished runs changed"),
    }
    body = {
        "measured": measured,
        "faults": results,
        "raw": str(root),
        "targets": target_rows(measured, targets),
    }
    return record.write(out, "bench-faults", body, repo=repo)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=options.BENCH_DIR / "faults.json")


def main(args: argparse.Namespace) -> int:
    doc = run(args.out, REPO)
    print(targets_text(doc["targets"]))
    print(f"results in {args.out}")
    return 0
