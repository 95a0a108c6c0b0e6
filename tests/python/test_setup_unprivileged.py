"""workflow/setup.sh as an unprivileged user on a machine without apt or libenet: it installs
nothing system-wide, lists what is missing, and the reference built without cgo runs a short cell
with isolation none (tcp works, enet fails saying why).

Simulated where this machine differs: the user is created with useradd and works via `runuser`;
apt-get, apt and dpkg* are left off its PATH; libenet is hidden from pkg-config (PKG_CONFIG_LIBDIR
at an empty directory). No network: the Go modules come vendored (`go mod vendor` here, from the
module cache, the way to bring them to an offline machine), the venv and the Go toolchain are
this checkout's (the copy links them)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
USER = "netstick-setup-test"
GO = REPO / ".tools" / "go" / "bin" / "go"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("runuser") is None,
    reason="needs root to create the unprivileged user (useradd, runuser)",
)


@contextlib.contextmanager
def _user_dir() -> Iterator[Path]:
    """A directory the unprivileged user can reach (pytest's tmp_path sits under a root-only one);
    the user exists for the test only."""
    subprocess.run(["useradd", "--create-home", USER], capture_output=True, check=False)
    try:
        with tempfile.TemporaryDirectory(prefix="netstick-setup-") as d:
            Path(d).chmod(0o755)
            yield Path(d)
    finally:
        subprocess.run(["userdel", "--remove", USER], capture_output=True, check=False)


def _path_without_apt(tmp: Path) -> str:
    """A PATH with every command of /usr/local/bin, /usr/bin and /bin except apt, apt-get, dpkg*."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/bin"):
        for f in Path(d).iterdir():
            if (
                f.name in {"apt", "apt-get"}
                or f.name.startswith("dpkg")
                or (bin_dir / f.name).exists()
            ):
                continue
            (bin_dir / f.name).symlink_to(f)
    return f"{GO.parent}:{bin_dir}"


def _as_user(
    args: list[str], cwd: Path, env: dict[str, str], timeout_s: float
) -> subprocess.CompletedProcess[str]:
    cmd = ["runuser", "-u", USER, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()), *args]
    return subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout_s, check=False
    )


@pytest.fixture(scope="module")
def built() -> Iterator[tuple[Path, dict[str, str]]]:
    """A copy of the checkout set up (workflow/setup.sh --for run) and built by the user."""
    with _user_dir() as user_dir:
        yield _setup_and_build(user_dir)


def _setup_and_build(user_dir: Path) -> tuple[Path, dict[str, str]]:
    if not (REPO / ".venv" / ".netstick-requirements").exists() or not GO.exists():
        pytest.skip("needs this checkout's .venv and .tools/go (make setup)")
    copy = user_dir / "netstick"
    (copy / "workflow").mkdir(parents=True)
    shutil.copy(REPO / "workflow" / "setup.sh", copy / "workflow" / "setup.sh")
    for f in ("requirements.txt", "requirements-nodeps.txt"):
        shutil.copy(REPO / f, copy / f)
    (copy / ".venv").symlink_to(REPO / ".venv")
    (copy / "profiles" / "das6").mkdir(parents=True)
    ref = copy / "prototypes" / "reference"
    shutil.copytree(
        REPO / "prototypes" / "reference", ref, ignore=shutil.ignore_patterns("bin", "vendor")
    )
    go_env = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local"}
    vendored = subprocess.run(
        [str(GO), "mod", "vendor"], cwd=ref, env=go_env, capture_output=True, text=True, check=False
    )
    if vendored.returncode != 0:
        pytest.skip(
            f"go mod vendor offline failed (modules not downloaded?): {vendored.stderr[:200]}"
        )
    empty = user_dir / "pkgconfig"
    empty.mkdir()
    subprocess.run(["chown", "-R", USER, str(copy)], check=True)
    home = Path(f"/home/{USER}")
    env = {
        "PATH": _path_without_apt(user_dir),
        "HOME": str(home),
        "PKG_CONFIG_LIBDIR": str(empty),
        "GOTOOLCHAIN": "local",
        "GOPROXY": "off",
    }

    setup = _as_user(["workflow/setup.sh", "--for", "run"], copy, env, 30)
    assert setup.returncode == 0, f"workflow/setup.sh --for run as {USER} failed:\n{setup.stderr}"
    assert "mode user" in setup.stderr and "WITHOUT the enet transport" in setup.stderr
    assert "apt-get install" not in setup.stderr
    assert (copy / ".tools" / "netstick-build.env").read_text() == "export CGO_ENABLED=0\n"
    assert (home / ".config" / "snakemake" / "das6").is_symlink()

    # make build's recipe for the reference, with setup's CGO_ENABLED (make build itself would also
    # build netemu, which an isolation-none run does not use).
    build = _as_user(
        [
            "bash",
            "-c",
            ". .tools/netstick-build.env && cd prototypes/reference"
            " && go build -mod=vendor -trimpath -o bin/netstick-ref ./cmd/netstick-ref",
        ],
        copy,
        env,
        75,
    )
    assert build.returncode == 0, f"building the reference without cgo failed:\n{build.stderr}"
    (copy / "setup.stderr").write_text(setup.stderr)
    return copy, env


def test_setup_as_a_user_without_apt_or_libenet_builds_the_reference_without_enet(
    built: tuple[Path, dict[str, str]],
) -> None:
    copy, _ = built
    stderr = (copy / "setup.stderr").read_text()
    assert "mode user" in stderr and "WITHOUT the enet transport" in stderr
    assert "libenet-dev" in stderr, "the warning must say how to get libenet"
    assert (copy / ".tools" / "netstick-build.env").read_text() == "export CGO_ENABLED=0\n"
    assert (copy / "prototypes" / "reference" / "bin" / "netstick-ref").is_file()


def _run_cell(copy: Path, env: dict[str, str], transport: str) -> subprocess.CompletedProcess[str]:
    """`netstick run-cell` as the user: one 1-second repetition, 2 idle players, isolation none."""
    cell = {
        "cell_id": f"user-{transport}",
        "prototype": str(copy / "prototypes" / "reference" / "prototype.yaml"),
        "transport": transport,
        "players": 2,
        "workload": "idle",
        "duration_s": 1,
        "sample_interval_s": 0.2,
        "isolation": "none",
        "placement": "local",
        "baseline_s": 0,
    }
    (copy / f"{transport}.json").write_text(json.dumps(cell))
    subprocess.run(["chown", USER, str(copy / f"{transport}.json")], check=True)
    netstick = str(REPO / ".venv" / "bin" / "netstick")
    args = [netstick, "run-cell", f"{transport}.json", "--out", f"runs/{transport}"]
    return _as_user(args, copy, env, 30)


def test_an_enet_run_without_libenet_fails_saying_why(built: tuple[Path, dict[str, str]]) -> None:
    copy, env = built
    run = _run_cell(copy, env, "enet")
    assert run.returncode != 0
    assert not (copy / "runs" / "enet" / "meta.json").exists()
    kept = "".join(
        p.read_text(errors="replace") for p in (copy / "runs").glob("enet.failed/*/*.log")
    )
    assert "enet transport unavailable" in run.stderr + kept, run.stderr[-800:]


# A build without libenet records no libenet version; the contract check requires only the
# library of the run's own transport, so its tcp runs are data.
def test_a_tcp_run_with_isolation_none_as_the_user(built: tuple[Path, dict[str, str]]) -> None:
    copy, env = built
    run = _run_cell(copy, env, "tcp")
    meta = copy / "runs" / "tcp" / "meta.json"
    assert meta.exists(), f"run-cell tcp as {USER} wrote no meta.json:\n{run.stderr}"
    status = json.loads((meta.parent / "status.json").read_text())
    assert status["status"] == "ok", status
