"""The history store on a data branch (workflow/nightly/archive.py) with real git and a local
bare repository as the remote: one commit per night and idempotent, two pushers at once both
kept, a push killed half way leaves the branch as it was, a wiped runner restored by
`netstick history pull` compares the next night with every earlier one, a differing file is
never overwritten on either side, and the script runs alone under `python3 -I`."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from stats.history.decide import decide
from stats.history.store import import_night, read_history
from workflow.harness.environment import this_machine
from workflow.nightly import archive

from support.history_nights import night_results, night_runs
from support.paths import NETSTICK, REPO

SCRIPT = REPO / "workflow" / "nightly" / "archive.py"
BRANCH = archive.DEFAULT_BRANCH
# The system's python3, as on the GitHub-hosted runner: not the venv's, which has the project.
PYTHON3 = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or "python3"


def _git(*args: str | Path) -> str:
    proc = subprocess.run(
        ["git", *map(str, args)], capture_output=True, text=True, timeout=60, check=True
    )
    return proc.stdout.strip()


def _bare(tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    _git("init", "--quiet", "--bare", remote)
    return remote


def _tip(remote: Path) -> str | None:
    proc = subprocess.run(
        ["git", f"--git-dir={remote}", "rev-parse", "--verify", "--quiet", f"refs/heads/{BRANCH}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.stdout.strip() or None


def _branch_files(remote: Path) -> dict[str, bytes]:
    """Every file on the remote's branch with its bytes."""
    tip = _tip(remote)
    assert tip is not None, "no branch on the remote"
    names = _git(f"--git-dir={remote}", "ls-tree", "-r", "--name-only", tip).splitlines()
    return {
        n: subprocess.run(
            ["git", f"--git-dir={remote}", "show", f"{tip}:{n}"],
            capture_output=True,
            timeout=60,
            check=True,
        ).stdout
        for n in names
    }


def _commits(remote: Path) -> list[str]:
    """The branch's commits, oldest first: "<sha> <subject>"."""
    out = _git(f"--git-dir={remote}", "log", "--reverse", "--format=%H %s", BRANCH)
    return out.splitlines()


def _local_files(history: Path) -> dict[str, bytes]:
    """Every file of a history dir (its path under it) with its bytes."""
    files = (p for p in history.rglob("*") if p.is_file())
    return {p.relative_to(history).as_posix(): p.read_bytes() for p in files}


def _night(root: Path, history: Path, seed: int, day: int, decided: bool = False) -> str:
    """A night of campaign `nightly` imported into history (measured on day `day` of
    November); decided: with its verdicts and one bisection beside it. Its stem."""
    results = night_results(root / f"night-{seed}", "nightly", night_runs(seed=seed))
    path, new = import_night(
        results, history, time_utc=f"2026-11-{day:02d}T02:00:00+00:00", machine=this_machine()
    )
    assert new
    if decided:
        doc = {"schema": 1, "campaign": "nightly", "night": path.name, "cells": []}
        for sub, name in (("verdicts", f"{path.stem}.json"), ("bisections", f"{path.stem}-1.json")):
            (history / "nightly" / sub).mkdir(parents=True, exist_ok=True)
            (history / "nightly" / sub / name).write_text(json.dumps(doc) + "\n")
    return path.stem


def _script(*args: str | Path) -> list[str]:
    """The archive script as the hosted job runs it: python3 -I, nothing of the project."""
    return [PYTHON3, "-I", str(SCRIPT), *map(str, args)]


def _run_script(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _script(*args), cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the push ended (exit {proc.returncode}) before {path}: {out}{err}")
        assert time.monotonic() < deadline, f"no {path} within {timeout_s} s"
        time.sleep(0.02)


def test_push_is_one_commit_per_night_and_idempotent(tmp_path: Path) -> None:
    remote, history = _bare(tmp_path), tmp_path / "history"
    stems = [_night(tmp_path, history, seed, 20 + seed, decided=seed == 1) for seed in range(3)]

    first = archive.push(history, str(remote), message="nightly run 1")
    assert [a.night.stem for a in first.appended] == stems  # oldest first
    commits = _commits(remote)
    assert len(commits) == 3
    assert [c.split(" ", 1)[1] for c in commits] == [f"nightly: night {s}" for s in stems]
    # Each commit adds exactly its night's files: the csv, and for the decided night its
    # verdicts and bisection.
    for (sha, *_), stem in zip((c.split(" ") for c in commits), stems, strict=True):
        added = _git(f"--git-dir={remote}", "diff-tree", "--root", "--no-commit-id",
                     "--name-status", "-r", sha).splitlines()  # fmt: skip
        assert all(line.startswith("A\t") for line in added), added
        assert all(stem in line for line in added), added
        assert len(added) == (3 if stem == stems[1] else 1)
    assert (
        _git(f"--git-dir={remote}", "log", "-1", "--format=%B", BRANCH)
        .rstrip()
        .endswith("nightly run 1")
    )
    assert _branch_files(remote) == _local_files(history)

    again = archive.push(history, str(remote))
    assert again.appended == () and again.tip == first.tip
    assert len(_commits(remote)) == 3

    # A verdict written after its night was archived goes in a commit of its own, of that night.
    verdict = history / "nightly" / "verdicts" / f"{stems[2]}.json"
    verdict.parent.mkdir(exist_ok=True)
    verdict.write_text('{"schema": 1}\n')
    late = archive.push(history, str(remote))
    assert [a.night.files for a in late.appended] == [(f"nightly/verdicts/{stems[2]}.json",)]
    assert _commits(remote)[-1].endswith(f"nightly: night {stems[2]}")


def test_two_pushers_at_once_both_kept(tmp_path: Path) -> None:
    """Two processes with their own history and work dirs, each with a night the other lacks,
    held after building their commits on the same tip and released together: one push is
    rejected, rebuilt on the other's tip and pushed again; the branch has both nights."""
    remote = _bare(tmp_path)
    base = tmp_path / "a" / "history"
    _night(tmp_path / "a", base, seed=0, day=20)
    archive.push(base, str(remote))
    base_tip = _tip(remote)
    other = tmp_path / "b" / "history"
    shutil.copytree(base, other)  # the second runner restored the same history
    _night(tmp_path / "a", base, seed=1, day=21, decided=True)
    _night(tmp_path / "b", other, seed=2, day=22)

    release = tmp_path / "release"
    procs = []
    for name, hist in (("a", base), ("b", other)):
        env = {
            **os.environ,
            archive.PAUSE_ENV: str(tmp_path / f"built-{name}"),
            archive.RESUME_ENV: str(release),
        }
        cmd = _script("push", "--history-dir", hist, "--remote", remote,
                      "--work-dir", tmp_path / name / "cache")  # fmt: skip
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))  # fmt: skip
    for name, proc in zip("ab", procs, strict=True):
        _wait_for(tmp_path / f"built-{name}", proc)
    release.touch()  # both built on base_tip: only one of them can fast-forward it
    outs = [proc.communicate(timeout=120) for proc in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    attempts = sorted(int(out.rsplit("(attempt ", 1)[1].split(")")[0]) for out, _ in outs)
    assert attempts[0] == 1 and attempts[1] >= 2, outs  # the loser rebuilt and retried

    on_branch = _branch_files(remote)
    assert on_branch == _local_files(base) | _local_files(other)  # no file lost
    assert len(on_branch) == 5  # 3 nights' csvs, one verdicts, one bisection
    commits = _git(f"--git-dir={remote}", "rev-list", "--parents", f"{base_tip}..{BRANCH}")
    assert len(commits.splitlines()) == 2  # one commit per new night, linear (one parent each)
    assert all(len(line.split()) == 2 for line in commits.splitlines())


def test_four_pushers_released_together_all_kept(tmp_path: Path) -> None:
    """No hook holding them: four processes released by one barrier file race on their own
    (the remote's ref lock or the fast-forward check refuses the late ones) and all nights land."""
    remote, barrier = _bare(tmp_path), tmp_path / "go"
    wait_then_run = (
        "import os, runpy, sys, time\n"
        "while not os.path.exists(sys.argv[1]): time.sleep(0.005)\n"
        "sys.argv = sys.argv[2:]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    procs, histories = [], []
    for i in range(4):
        hist = tmp_path / f"r{i}" / "history"
        _night(tmp_path / f"r{i}", hist, seed=10 + i, day=10 + i, decided=i % 2 == 0)
        histories.append(hist)
        cmd = [PYTHON3, "-I", "-c", wait_then_run, str(barrier), str(SCRIPT), "push",
               "--history-dir", str(hist), "--remote", str(remote)]  # fmt: skip
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))  # fmt: skip
    barrier.touch()
    outs = [proc.communicate(timeout=120) for proc in procs]
    assert [p.returncode for p in procs] == [0] * 4, outs
    expected: dict[str, bytes] = {}
    for hist in histories:
        expected |= _local_files(hist)
    assert _branch_files(remote) == expected and len(expected) == 8
    assert len(_commits(remote)) == 4


def _pre_receive_that_waits(remote: Path, marker: Path) -> Path:
    """A hook on the remote that signals and then waits: the push is under way, its objects
    sent, its ref not yet moved."""
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f'#!/bin/sh\ntouch "{marker}"\nsleep 60\n')
    hook.chmod(0o755)
    return hook


@pytest.mark.parametrize("where", ["after-local-commit", "during-git-push"])
def test_push_killed_half_way_leaves_the_branch_intact(tmp_path: Path, where: str) -> None:
    remote, history = _bare(tmp_path), tmp_path / "history"
    cache = tmp_path / "cache"
    for seed in range(2):
        _night(tmp_path, history, seed, 20 + seed)
    archive.push(history, str(remote), work_dir=cache)
    before_tip, before = _tip(remote), _branch_files(remote)
    stem = _night(tmp_path, history, seed=2, day=22, decided=True)

    marker = tmp_path / "paused"
    env = dict(os.environ)
    hook = None
    if where == "after-local-commit":
        env[archive.PAUSE_ENV] = str(marker)
    else:
        hook = _pre_receive_that_waits(remote, marker)
    cmd = _script("push", "--history-dir", history, "--remote", remote, "--work-dir", cache)
    # Its own session: the kill takes git push and the remote's receive-pack with it.
    proc = subprocess.Popen(cmd, env=env, text=True, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    _wait_for(marker, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    if hook is not None:
        hook.unlink()

    assert _tip(remote) == before_tip
    assert _branch_files(remote) == before
    _git(f"--git-dir={remote}", "fsck", "--no-progress")
    # What a kill during a fetch leaves in the cache too: a lock git itself would refuse.
    (cache / "refs" / "remotes" / "archive" / f"{BRANCH}.lock").write_text("stale\n")

    res = _run_script("push", "--history-dir", history, "--remote", remote, "--work-dir", cache)
    assert res.returncode == 0, res.stderr
    assert f"appended nightly night {stem} (3 files)" in res.stdout
    assert _branch_files(remote) == _local_files(history)
    assert len(_commits(remote)) == 3


def test_a_work_dir_that_is_no_repository_is_made_again(tmp_path: Path) -> None:
    remote, history = _bare(tmp_path), tmp_path / "history"
    cache = tmp_path / "cache"
    _night(tmp_path, history, 0, 20)
    archive.push(history, str(remote), work_dir=cache)
    (cache / "HEAD").write_text("garbage\n")  # what a kill during `git init` may leave
    (cache / "objects").rename(tmp_path / "objects-gone")
    _night(tmp_path, history, 1, 21)
    res = archive.push(history, str(remote), work_dir=cache)
    assert len(res.appended) == 1 and _branch_files(remote) == _local_files(history)


def test_a_work_dir_holding_other_files_is_never_deleted(tmp_path: Path) -> None:
    remote, history = _bare(tmp_path), tmp_path / "history"
    _night(tmp_path, history, 0, 20)
    mistaken = tmp_path / "results"  # --work-dir pointing at other data by mistake
    mistaken.mkdir()
    (mistaken / "runs.parquet").write_bytes(b"measured")
    with pytest.raises(archive.ArchiveError, match="no cache of netstick history"):
        archive.push(history, str(remote), work_dir=mistaken)
    assert (mistaken / "runs.parquet").read_bytes() == b"measured"
    assert _tip(remote) is None


def test_wiped_runner_restored_compares_with_every_earlier_night(tmp_path: Path) -> None:
    remote, runner = _bare(tmp_path), tmp_path / "runner"
    history, cache = runner / "data" / "history", runner / "data" / ".history-archive"
    for seed in range(4):
        _night(tmp_path, history, seed, 20 + seed, decided=seed in (1, 3))
    cli = [NETSTICK, "history"]
    where = ["--remote", str(remote), "--history-dir", str(history)]
    pushed = subprocess.run([*cli, "push", *where], capture_output=True, text=True, timeout=120)
    assert pushed.returncode == 0, pushed.stderr
    assert pushed.stdout.count("appended nightly night") == 4
    assert cache.is_dir()  # the default work dir: beside the history dir
    kept = tmp_path / "kept"
    shutil.copytree(history, kept)

    shutil.rmtree(runner)  # the runner's directory wiped: history and cache
    proc = subprocess.run([*cli, "pull", *where], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "restored 8 files" in proc.stdout
    assert _local_files(history) == _local_files(kept)  # every night, byte for byte

    again = archive.pull(str(remote), history_dir=history)
    assert again.restored == () and again.present == 8

    tonight = _night(tmp_path, history, seed=9, day=28)
    doc = decide(read_history(history, "nightly"), k=100)
    earlier = sorted(p.name for p in kept.glob("nightly/*.csv"))
    assert doc["night"] == f"{tonight}.csv"
    assert doc["baseline_nights"] == earlier and len(earlier) == 4
    assert len(archive.push(history, str(remote)).appended) == 1


def test_other_content_is_never_overwritten(tmp_path: Path) -> None:
    remote, history = _bare(tmp_path), tmp_path / "history"
    stems = [_night(tmp_path, history, seed, 20 + seed) for seed in range(2)]
    archive.push(history, str(remote))
    tip = _tip(remote)

    changed = tmp_path / "changed"
    shutil.copytree(history, changed)
    victim = changed / "nightly" / f"{stems[0]}.csv"
    victim.write_bytes(victim.read_bytes().replace(b"2026-11-20", b"2026-11-19"))
    _night(tmp_path, changed, seed=5, day=25)  # a new night: not pushed either
    res = _run_script("push", "--history-dir", changed, "--remote", remote,
                      "--work-dir", tmp_path / "cache-changed")  # fmt: skip
    assert res.returncode == 2
    assert str(victim) in res.stderr and "nothing was pushed" in res.stderr
    assert _tip(remote) == tip

    # pull: the differing local file named, nothing restored (not even the missing night)
    (changed / "nightly" / f"{stems[1]}.csv").unlink()
    with pytest.raises(archive.ArchiveError, match=str(victim)):
        archive.pull(str(remote), history_dir=changed, work_dir=tmp_path / "cache-changed")
    assert not (changed / "nightly" / f"{stems[1]}.csv").exists()
    assert b"2026-11-19" in victim.read_bytes()


def test_pull_without_the_branch_says_so(tmp_path: Path) -> None:
    remote = _bare(tmp_path)
    with pytest.raises(archive.ArchiveError, match=f"no branch '{BRANCH}'"):
        archive.pull(str(remote), history_dir=tmp_path / "history")
    quiet = archive.pull(str(remote), history_dir=tmp_path / "history", allow_missing=True)
    assert quiet.tip is None and quiet.restored == ()


def test_the_script_alone_under_python3_isolated(tmp_path: Path) -> None:
    """A sparse checkout of the one file, run by the system python3 in isolated mode from a
    directory without the project: push creates the branch, pull restores from it."""
    sparse = tmp_path / "checkout" / "workflow" / "nightly"
    sparse.mkdir(parents=True)
    shutil.copy(SCRIPT, sparse / "archive.py")
    remote, history = _bare(tmp_path), tmp_path / "artifact" / "history"
    for seed in range(2):
        _night(tmp_path, history, seed, 20 + seed, decided=seed == 0)
    script = [PYTHON3, "-I", "workflow/nightly/archive.py"]
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}  # no git identity configured
    common = ["--remote", str(remote), "--work-dir", str(tmp_path / "cache")]
    push = subprocess.run([*script, "push", "--history-dir", str(history), *common],
                          cwd=tmp_path / "checkout", env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert push.returncode == 0, push.stderr
    assert push.stdout.count("appended nightly night") == 2
    restored = tmp_path / "restored"
    pull = subprocess.run([*script, "pull", "--history-dir", str(restored), *common],
                          cwd=tmp_path / "checkout", env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert pull.returncode == 0, pull.stderr
    assert _local_files(restored) == _local_files(history) == _branch_files(remote)
