"""workflow/setup.sh as an unprivileged user on a machine without apt or libenet: it installs
nothing system-wide, lists what is missing, `make build` builds the reference without cgo, a short
campaign with isolation none runs through Snakemake to its report, and an enet run fails saying
why.

Simulated where this machine differs: the user is created with useradd and works via `runuser`;
apt-get and apt are left off its PATH (dpkg stays, see _path_without_apt); libenet is hidden from
pkg-config (PKG_CONFIG_LIBDIR at an empty directory). No network: the Go modules come vendored
(`go mod vendor` here, from the module cache, the way to bring them to an offline machine), the venv
is this checkout's (the copy links it) and the Go toolchain is the one setup chose here (on the
user's PATH)."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from support.paths import REPO

USER = "netstick-setup-test"
# make puts .tools/go/bin first on PATH when setup fetched a toolchain; else the system's Go.
_GO_FOUND = shutil.which("go")
GO = Path(_GO_FOUND).resolve() if _GO_FOUND else None
GO_MODULES = ("prototypes/reference", "workflow/harness/netemu")

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


def _copy_checkout(dest: Path) -> None:
    """The checkout's files as a clone would have them (tracked and new, not ignored): no data,
    builds, venv or tools of this checkout."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode()  # fmt: skip
    for rel in filter(None, listed.split("\0")):
        src = REPO / rel
        if not src.is_file():  # deleted in the working tree, not yet in the index
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)


def _path_without_apt(tmp: Path) -> str:
    """A PATH with every command of /usr/local/bin, /usr/bin and /bin except apt and apt-get. The
    dpkg tools stay: Debian's R packages (r-cran-rmarkdown) ask dpkg for the version of the jQuery
    they use instead of bundling it, as R packages from CRAN (an EL machine's) do; without root
    dpkg installs nothing, and setup takes its apt path only as root."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/bin"):
        for f in Path(d).iterdir():
            if f.name in {"apt", "apt-get"} or (bin_dir / f.name).exists():
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
    if not (REPO / ".venv" / ".netstick-requirements").exists() or GO is None:
        pytest.skip("needs this checkout's .venv and a Go toolchain on PATH (make setup)")
    copy = user_dir / "netstick"
    _copy_checkout(copy)
    (copy / ".venv").symlink_to(REPO / ".venv")
    go_env = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local"}
    for module in GO_MODULES:
        vendored = subprocess.run(
            [str(GO), "mod", "vendor"], cwd=copy / module, env=go_env,
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if vendored.returncode != 0:
            pytest.skip(
                f"go mod vendor offline failed in {module} (modules not downloaded?): "
                f"{vendored.stderr[:200]}"
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

    setup = _as_user(["workflow/setup.sh", "--for", "run"], copy, env, 60)
    assert setup.returncode == 0, f"workflow/setup.sh --for run as {USER} failed:\n{setup.stderr}"
    (copy / "setup.stderr").write_text(setup.stderr)
    # What the workflow's own build step runs (the reference manifest's build command): setup
    # again, then the reference and the emulator, from the vendored modules.
    build = _as_user(["make", "build", "SETUP_FOR=run"], copy, env, 240)
    assert build.returncode == 0, f"make build as {USER} failed:\n{build.stderr[-3000:]}"
    return copy, env


def test_setup_as_a_user_without_apt_or_libenet_builds_the_reference_without_enet(
    built: tuple[Path, dict[str, str]],
) -> None:
    copy, _ = built
    stderr = (copy / "setup.stderr").read_text()
    assert "mode user" in stderr and "WITHOUT the enet transport" in stderr
    assert "libenet-dev" in stderr, "the warning must say how to get libenet"
    assert "apt-get install" not in stderr
    assert (copy / ".tools" / "netstick-build.env").read_text() == "export CGO_ENABLED=0\n"
    assert (Path(f"/home/{USER}") / ".config" / "snakemake" / "das6").is_symlink()
    assert (copy / "prototypes" / "reference" / "bin" / "netstick-ref").is_file()
    assert (copy / "workflow" / "harness" / "netemu" / "bin" / "netemu").is_file()


def test_an_enet_run_without_libenet_fails_saying_why(built: tuple[Path, dict[str, str]]) -> None:
    copy, env = built
    cell = {
        "cell_id": "user-enet",
        "prototype": str(copy / "prototypes" / "reference" / "prototype.yaml"),
        "transport": "enet",
        "players": 2,
        "workload": "idle",
        "duration_s": 1,
        "sample_interval_s": 0.2,
        "isolation": "none",
        "placement": "local",
        "baseline_s": 0,
    }
    (copy / "enet.json").write_text(json.dumps(cell))
    subprocess.run(["chown", USER, str(copy / "enet.json")], check=True)
    args = [".venv/bin/netstick", "run-cell", "enet.json", "--out", "runs/enet"]
    run = _as_user(args, copy, env, 30)
    assert run.returncode != 0
    assert not (copy / "runs" / "enet" / "meta.json").exists()
    kept = "".join(
        p.read_text(errors="replace") for p in (copy / "runs").glob("enet.failed/*/*.log")
    )
    assert "enet transport unavailable" in run.stderr + kept, run.stderr[-800:]


# A build without libenet records no libenet version; the contract check requires every declared
# library but other transports' (libenet is enet's), so its tcp runs are data.
def test_a_short_campaign_with_isolation_none_runs_to_its_report_as_the_user(
    built: tuple[Path, dict[str, str]],
) -> None:
    copy, env = built
    campaign = {
        "name": "user-short",
        "description": "tcp of the reference as an unprivileged user, without namespaces",
        "seed": 7,
        "repetitions": 2,
        "defaults": {
            "duration_s": 2,
            "network_profile": "lan",
            "isolation": "none",
            "baseline_s": 0,
        },
        "matrix": [
            {
                "name": "user",
                "prototypes": [{"name": "reference", "transports": ["tcp"]}],
                "players": [2],
                "workloads": [{"name": "active"}],
            }
        ],
    }
    path = copy / "user-short.yaml"
    path.write_text(yaml.safe_dump(campaign, sort_keys=False))
    subprocess.run(["chown", USER, str(path)], check=True)
    run = _as_user(
        [".venv/bin/snakemake", "--cores", "2", "--config", "campaign=user-short.yaml"],
        copy, env, 420,
    )  # fmt: skip
    assert run.returncode == 0, f"the campaign as {USER} failed:\n{run.stderr[-3000:]}"
    metas = sorted((copy / "data" / "raw" / "user-short").rglob("meta.json"))
    assert len(metas) == 2, [str(m) for m in metas]
    for meta_path in metas:
        meta = json.loads(meta_path.read_text())
        assert meta["isolation"] == "none", meta_path
        status = json.loads((meta_path.parent / "status.json").read_text())
        assert status["status"] == "ok", (meta_path, status)
    assert (copy / "data" / "results" / "user-short").is_dir()
    report = copy / "report" / "_output" / "user-short" / "index.html"
    assert report.is_file() and report.stat().st_size > 0, run.stderr[-2000:]


# The user is not root: a run that wants isolation builds its namespaces, veths and emulator in a
# user namespace of its own (workflow/harness/userns.py) and records isolation userns; the same
# campaign shape as above, under the blog's turbulent profile, through Snakemake.
def test_a_turbulent_campaign_as_the_user_runs_in_user_namespaces(
    built: tuple[Path, dict[str, str]],
) -> None:
    copy, env = built
    campaign = {
        "name": "user-turbulent",
        "description": "tcp of the reference as an unprivileged user under the turbulent profile",
        "seed": 7,
        "repetitions": 2,
        "defaults": {"duration_s": 3, "network_profile": "turbulent", "baseline_s": 0},
        "matrix": [
            {
                "name": "user",
                "prototypes": [{"name": "reference", "transports": ["tcp"]}],
                "players": [1],
                "workloads": [{"name": "stream", "params": {"size": 400, "rate": 60}}],
            }
        ],
    }
    path = copy / "user-turbulent.yaml"
    path.write_text(yaml.safe_dump(campaign, sort_keys=False))
    subprocess.run(["chown", USER, str(path)], check=True)
    run = _as_user(
        [".venv/bin/snakemake", "--cores", "2", "--config", "campaign=user-turbulent.yaml"],
        copy, env, 420,
    )  # fmt: skip
    assert run.returncode == 0, f"the campaign as {USER} failed:\n{run.stderr[-3000:]}"
    metas = sorted((copy / "data" / "raw" / "user-turbulent").rglob("meta.json"))
    assert len(metas) == 2, [str(m) for m in metas]
    for meta_path in metas:
        meta = json.loads(meta_path.read_text())
        status = json.loads((meta_path.parent / "status.json").read_text())
        assert status["status"] == "ok", (meta_path, status)
        assert meta["isolation"] == "userns", meta_path
        # The profile was applied by the emulator: it delayed every frame and lost some upward.
        emulator = meta["emulator"]
        assert emulator["ab"]["frames_out"] > 0 and emulator["ba"]["frames_out"] > 0, emulator
        # Exact counters of the server's own veth, not the host's.
        server = meta["net_totals"]["server"]
        assert server["rx_packets"] > 0 and server["tx_packets"] > 0, server
        # Written by the user on the real file system, not by root of its user namespace.
        assert meta_path.stat().st_uid == pwd.getpwnam(USER).pw_uid, meta_path
    rows = (copy / "data" / "results" / "user-turbulent" / "runs.csv").read_text()
    assert "userns" in rows


# `netstick bench harness --as-user`, run by root from the user's checkout (whose venv the user
# can run): the emulator's cells again as the user, beside root's, in a record of its own.
def test_bench_harness_as_the_user_reports_the_emulator_beside_roots(
    built: tuple[Path, dict[str, str]],
) -> None:
    copy, _ = built
    out = copy / "harness-userns.json"
    bench = subprocess.run(
        [str(copy / ".venv" / "bin" / "netstick"), "bench", "harness", "--as-user", USER,
         "--emulator-only", "--repetitions", "1", "--duration-s", "1.5", "--out", str(out)],
        cwd=copy, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert bench.returncode == 0, bench.stderr[-3000:]
    measured = json.loads(out.read_text())["measured"]
    assert measured["isolation"] == ["netns"]
    theirs = measured["as_user"]
    assert theirs["user"] == USER and theirs["uid"] == pwd.getpwnam(USER).pw_uid
    assert theirs["isolation"] == ["userns"]
    # The user's runs went through the emulator: 25 ms each way is measured as about 50 ms.
    assert abs(theirs["emulator_delay_error_p50_ms"]) < 5, theirs["delay_error_p50_ms"]
    assert theirs["emulator_200"]["stats"]["ab"]["frames_out"] > 0
    targets = {t["metric"]: t for t in json.loads(out.read_text())["targets"]}
    assert {"userns_emulator_added_rtt_p50_ms", "emulator_added_rtt_p50_ms"} <= set(targets)
    # The user's run directories are the user's.
    user_runs = sorted(copy.glob("data/raw/bench-harness/*/user-delay25-udp-50-r1/meta.json"))
    assert user_runs and user_runs[0].stat().st_uid == pwd.getpwnam(USER).pw_uid


def test_bench_harness_refuses_an_unknown_user_before_any_run() -> None:
    bench = subprocess.run(
        [str(REPO / ".venv" / "bin" / "netstick"), "bench", "harness", "--as-user",
         "netstick-no-such-user", "--emulator-only"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert bench.returncode == 2
    assert "--as-user netstick-no-such-user: no such user on this machine" in bench.stderr
