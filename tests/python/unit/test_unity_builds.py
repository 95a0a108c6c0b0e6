"""Prototypes whose builds are made elsewhere (the Unity players GameCI builds): the manifest's
client_executable and build.external, campaign planning while their builds are missing, and
workflow/tools/fetch-unity-builds.sh (tested with a stand-in `gh`). (A run whose clients are
another program: e2e/run/test_client_executable_run.py.)"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from prototypes.contract import manifest as manifests
from prototypes.contract.argv import client_argvs, server_argv
from prototypes.contract.library_builds import VersionBuildError
from workflow import files
from workflow.campaign import expand as campaigns
from workflow.campaign import progress
from workflow.harness import prototype_record
from workflow.harness.builds import build_version

from support.paths import FAKE_MANIFEST, FAKE_PROTOTYPE, REPO

FETCH = REPO / "workflow" / "tools" / "fetch-unity-builds.sh"
BASH = shutil.which("bash") or "/bin/bash"
EXTERNAL = (
    "GitHub Actions workflow .github/workflows/build-prototypes.yml (GameCI; repository secrets "
    "UNITY_LICENSE, UNITY_EMAIL, UNITY_PASSWORD)"
)


def _fake_doc() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(FAKE_MANIFEST.read_text())
    doc["executable"] = str(FAKE_PROTOTYPE)  # absolute: the manifest is written elsewhere
    return doc


# -- the manifest: client_executable, build.external --------------------------------------


def test_client_executable_is_what_clients_run(tmp_path: Path) -> None:
    doc = _fake_doc()
    doc["client_executable"] = "client.py"
    man = manifests.parse(doc, tmp_path / "prototype.yaml")
    assert man.program("server") == FAKE_PROTOTYPE
    assert man.program("client") == tmp_path / "client.py"
    assert man.executables == (FAKE_PROTOTYPE, tmp_path / "client.py")
    cell = {"transport": "tcp", "workload": "idle", "players": 3}
    server = server_argv(man, cell, host="h", port=1, log_dir="l")
    clients = client_argvs(man, cell, host="h", port=1, log_dir="l",
                                     players_per_process=2)  # fmt: skip
    # The launcher applies to both programs.
    assert server[:2] == [sys.executable, str(FAKE_PROTOTYPE)]
    assert [argv[:2] for argv in clients] == [[sys.executable, str(tmp_path / "client.py")]] * 2
    # Without the key, clients run the executable.
    plain = manifests.parse(_fake_doc(), tmp_path / "prototype.yaml")
    assert plain.program("client") == FAKE_PROTOTYPE
    assert plain.executables == (FAKE_PROTOTYPE,)


def _unity_like(tmp_path: Path) -> dict[str, Any]:
    """The fake prototype laid out like a Unity project: server and client builds per track,
    built elsewhere, the thesis track as another library version."""
    doc = _fake_doc()
    doc["executable"] = "Builds/current/server/netstick-fake"
    doc["client_executable"] = "Builds/current/client/netstick-fake"
    doc["build"] = {"external": EXTERNAL, "fetch": ["../tools/fetch.sh", "--latest", "fake"]}
    doc["library_builds"] = {
        "libraries": {doc["transports"][0]["library"]: ["3.9"]},
        "executable": "Builds/thesis/server/netstick-fake",
        "client_executable": "Builds/thesis/client/netstick-fake",
    }
    return doc


def test_external_build_manifest(tmp_path: Path) -> None:
    man = manifests.parse(_unity_like(tmp_path), tmp_path / "p" / "prototype.yaml")
    assert man.build_command is None
    assert man.build_external == EXTERNAL
    assert man.build_fetch == ("../tools/fetch.sh", "--latest", "fake")
    library = man.transports[0].library
    thesis = man.for_version("tcp", "3.9")
    assert thesis.program("server") == tmp_path / "p/Builds/thesis/server/netstick-fake"
    assert thesis.program("client") == tmp_path / "p/Builds/thesis/client/netstick-fake"
    vb = thesis.library_build
    assert vb is not None and vb.external == EXTERNAL and vb.command == ()
    assert vb.library == library and vb.missing_executables() == vb.executables
    # Nothing here builds it: build_version names who does and how to fetch it.
    with pytest.raises(VersionBuildError) as err:
        build_version(vb)
    text = str(err.value)
    assert "Builds/thesis/server/netstick-fake" in text and "Builds/thesis/client" in text
    assert EXTERNAL in text and "../tools/fetch.sh --latest fake" in text
    for path in vb.executables:
        path.parent.mkdir(parents=True)
        path.write_text("")
    assert build_version(vb) is False  # present: nothing to do


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["build"].update(command=["make"]),
            "key build: expected exactly one of command",
        ),
        (lambda d: d.update(build={}), "key build: expected exactly one of command"),
        (
            lambda d: d["build"].update(timeout_s=5),
            "key build.timeout_s: only allowed with build.command",
        ),
        (
            lambda d: d.update(build={"command": ["make"], "fetch": ["x"]}),
            "key build.fetch: only allowed with build.external",
        ),
        (
            lambda d: d["library_builds"].update(executable="Builds/current/server/netstick-fake"),
            "key library_builds.executable: Python socket (standard library) 3.9 would run "
            "Builds/current/server/netstick-fake, the pinned build's executable",
        ),
        (
            lambda d: d["library_builds"]["libraries"][d["transports"][0]["library"]].append("4"),
            "key library_builds.executable: Python socket (standard library) 4 and Python socket "
            "(standard library) 3.9 would share Builds/thesis/server/netstick-fake",
        ),
        (
            lambda d: d.update(build={"command": ["make"]}),
            "key library_builds.command: missing; required unless build.external",
        ),
        (
            lambda d: d["library_builds"].update(client_executable="Builds/{nope}/client"),
            "key library_builds.client_executable: unknown placeholder {nope}",
        ),
    ],
)
def test_external_build_manifest_problems(tmp_path: Path, change: Any, expected: str) -> None:
    doc = _unity_like(tmp_path)
    change(doc)
    with pytest.raises(manifests.ManifestError) as err:
        manifests.parse(doc, tmp_path / "prototype.yaml")
    assert expected in str(err.value)


def test_schema_describes_the_new_keys() -> None:
    schema = json.loads(manifests.SCHEMA_PATH.read_text())
    props = schema["properties"]
    assert "client_executable" in props and props["client_executable"]["description"]
    build = props["build"]["properties"]
    assert build["external"]["description"] and build["fetch"]["description"]
    assert props["library_builds"]["properties"]["client_executable"]["description"]


# -- campaign planning while the builds are missing ----------------------------------------

# The libraries, transports and workloads the thesis campaigns ask of each Unity prototype.
UNITY = {
    "mirror": (["kcp", "telepathy"], "mirror", "86.13.4"),
    "fishnet": (["tugboat"], "com.firstgeargames.fishnet", "4.2.2"),
    "ngo": (["utp"], "com.unity.netcode.gameobjects", "1.9.1"),
    "nfe": (["utp"], "com.unity.netcode", "1.0.17"),
}
WORKLOADS = ["idle", "active", "wander", "world", "envmod", "rpc-toggle", "stream", "pingpong"]


def _unity_manifest(root: Path, lib: str) -> Path:
    """prototypes/unity/<lib>/prototype.yaml under root, laid out as the Unity projects are."""
    transports, library, thesis = UNITY[lib]
    doc = _fake_doc()
    doc["name"] = f"unity-{lib}"
    doc["executable"] = f"Builds/current/server/netstick-{lib}"
    doc["client_executable"] = f"Builds/current/client/netstick-{lib}"
    doc.pop("launcher")
    doc["workloads"] = WORKLOADS
    doc["transports"] = [
        {**doc["transports"][0], "name": t, "library": library, "version": "1.0"}
        for t in transports
    ]
    doc["build"] = {
        "external": EXTERNAL,
        "fetch": ["../../../workflow/tools/fetch-unity-builds.sh", "--latest", lib],
    }
    doc["library_builds"] = {
        "libraries": {library: [thesis]},
        "executable": f"Builds/thesis/server/netstick-{lib}",
        "client_executable": f"Builds/thesis/client/netstick-{lib}",
    }
    path = root / "prototypes" / "unity" / lib / "prototype.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def _install_builds(manifest: Path, track: str) -> None:
    lib = manifest.parent.name
    for role in ("server", "client"):
        exe = manifest.parent / "Builds" / track / role / f"netstick-{lib}"
        exe.parent.mkdir(parents=True)
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)


@pytest.mark.parametrize(
    ("campaign", "libs"),
    [("net-celerity", ["mirror", "nfe"]), ("envirostick", ["mirror", "fishnet", "ngo"])],
)
def test_thesis_campaigns_list_unity_cells_without_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, campaign: str, libs: list[str]
) -> None:
    """With the Unity manifests in place but no builds, `netstick campaign plan` lists their
    cells as not runnable, naming the missing players of the thesis track (the studies' library
    versions, which these campaigns reproduce), the download command and GameCI."""
    for lib in libs:
        _unity_manifest(tmp_path, lib)
    monkeypatch.setattr(campaigns, "REPO", tmp_path)
    monkeypatch.setattr(files, "REPO", tmp_path)  # paths in messages: relative to that root
    names = [f"unity/{lib}" for lib in libs]
    plan = campaigns.plan(campaign, only_prototypes=names)
    assert plan.runs == []
    assert sorted(u.prototype for u in plan.unavailable) == sorted(names)
    text = progress.describe_plan(plan)
    for lib in libs:
        u = next(u for u in plan.unavailable if u.prototype == f"unity/{lib}")
        assert u.cells > 0 and u.runs >= u.cells
        _, library, thesis = UNITY[lib]
        assert u.reason == (
            f"prototypes/unity/{lib}/prototype.yaml (library {library} {thesis}): "
            f"prototypes/unity/{lib}/Builds/thesis/server/netstick-{lib}, "
            f"prototypes/unity/{lib}/Builds/thesis/client/netstick-{lib} missing; download "
            f"them with `workflow/tools/fetch-unity-builds.sh --latest {lib}`, or build them: "
            + EXTERNAL
        )
        assert f"not runnable here: unity/{lib} ({u.cells} cells, {u.runs} runs): " in text
    # With the builds downloaded, the same cells are planned as runs.
    for lib in libs:
        _install_builds(tmp_path / "prototypes" / "unity" / lib / "prototype.yaml", "thesis")
    manifests.load_once.cache_clear()
    ready = campaigns.plan(campaign, only_prototypes=names)
    assert ready.unavailable == []
    assert len(ready.cell_ids) == sum(u.cells for u in plan.unavailable)


def test_missing_track_is_listed_beside_the_runnable_one(tmp_path: Path) -> None:
    """The pinned build present, the thesis track's missing: the thesis cells are listed with
    their own reason, the others run."""
    manifest = _unity_manifest(tmp_path, "mirror")
    _install_builds(manifest, "current")
    campaign = tmp_path / "unity-tracks.yaml"
    campaign.write_text(
        yaml.safe_dump(
            {
                "name": "unity-tracks",
                "description": "both tracks",
                "seed": 1,
                "repetitions": 2,
                "defaults": {"duration_s": 5, "network_profile": "lan"},
                "matrix": [
                    {
                        "name": "b",
                        "prototypes": [
                            {
                                "name": "unity/mirror",
                                "manifest": str(manifest),
                                "transports": ["kcp"],
                                "versions": ["pinned", "86.13.4"],
                            }
                        ],
                        "players": [2, 4],
                        "workloads": [{"name": "idle"}],
                    }
                ],
            }
        )
    )
    plan = campaigns.plan(campaign)
    assert {r.cell["library_version"] for r in plan.runs} == {"pinned"}
    assert len(plan.runs) == 4
    [u] = plan.unavailable
    assert (u.prototype, u.cells, u.runs) == ("unity/mirror", 2, 4)
    assert "(library mirror 86.13.4)" in u.reason
    assert "Builds/thesis/server/netstick-mirror" in u.reason
    assert "Builds/thesis/client/netstick-mirror" in u.reason
    assert "Builds/current" not in u.reason
    _install_builds(manifest, "thesis")
    manifests.load_once.cache_clear()
    both = campaigns.plan(campaign)
    assert both.unavailable == [] and len(both.runs) == 8
    # Each version's runs start that version's programs.
    thesis = manifests.load(manifest).for_version("kcp", "86.13.4")
    assert thesis.program("client") == manifest.parent / "Builds/thesis/client/netstick-mirror"


def test_thesis_campaigns_plan_in_this_checkout() -> None:
    """The real campaigns plan whether or not the Unity manifests and builds are here: a Unity
    prototype runs, or is listed with a reason that says how to get it."""
    for name in ("net-celerity", "envirostick"):
        plan = campaigns.plan(name)
        for u in plan.unavailable:
            assert u.prototype.startswith("unity/")
            assert "no manifest" in u.reason or "fetch-unity-builds.sh" in u.reason, u.reason


# -- workflow/tools/fetch-unity-builds.sh, with a stand-in gh -------------------------------

FAKE_GH = """#!{python}
# Stand-in for the GitHub CLI: `run list` answers with runs, `run download RUN --pattern P
# --dir D` writes one directory per artifact of the run (as gh does), modes lost as in a zip.
import json, os, pathlib, sys
args = sys.argv[1:]
pathlib.Path(os.environ["FAKE_GH_LOG"]).open("a").write(json.dumps(args) + "\\n")
if args[:2] == ["run", "list"]:
    print(os.environ.get("FAKE_GH_LATEST", ""))
    sys.exit(0)
if args[:2] == ["run", "download"]:
    dest = pathlib.Path(args[args.index("--dir") + 1])
    for name in os.environ["FAKE_GH_ARTIFACTS"].split():
        lib = name.split("-")[1]
        art = dest / name
        (art / f"netstick-{{lib}}_Data").mkdir(parents=True)
        (art / f"netstick-{{lib}}_Data" / "globalgamemanagers").write_text(name)
        if not os.environ.get("FAKE_GH_NOPROGRAM"):
            (art / f"netstick-{{lib}}").write_text(f"player of {{name}} run {{args[2]}}")
            (art / f"netstick-{{lib}}").chmod(0o644)
        (art / "UnityPlayer.so").write_text("so")
    sys.exit(0)
sys.exit(f"unexpected gh {{args}}")
"""
ARTIFACTS = " ".join(
    f"netstick-{lib}-{track}-{role}"
    for lib in ("mirror", "ngo")
    for track in ("current", "thesis")
    for role in ("server", "client")
)


def _fetch(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": path if path is not None else f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "FAKE_GH_LOG": str(tmp_path / "gh.log"),
        "FAKE_GH_ARTIFACTS": ARTIFACTS,
        "FAKE_GH_LATEST": "4242",
        "TMPDIR": str(tmp_path),
    }
    return subprocess.run(
        [BASH, str(FETCH), *args],
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def unity_dest(tmp_path: Path) -> Path:
    """A stand-in gh on PATH and a prototypes/unity with the mirror and ngo projects."""
    gh = tmp_path / "bin" / "gh"
    gh.parent.mkdir()
    gh.write_text(FAKE_GH.format(python=sys.executable))
    gh.chmod(0o755)
    dest = tmp_path / "unity"
    for lib in ("mirror", "ngo", "nfe"):
        (dest / lib).mkdir(parents=True)
    return dest


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--run"], "--run needs a run id"),
        (["--run", "12x"], "--run: expected a numeric run id, found '12x'"),
        (["--run", "1", "--latest"], "--run, --latest and --from exclude each other"),
        (["--latest", "--from", "."], "--run, --latest and --from exclude each other"),
        (["--from", "/nonexistent"], "--from needs a directory of downloaded artifacts"),
        (["--frobnicate"], "unknown option '--frobnicate'"),
        (["--track"], "--track needs a track name"),
        (["--repo", "nothing"], "--repo needs OWNER/NAME"),
        (["doom"], "no Unity project"),
        (["Mirror!"], "expected a project name"),
    ],
)
def test_fetch_refuses_bad_arguments(
    tmp_path: Path, unity_dest: Path, args: list[str], expected: str
) -> None:
    res = _fetch(tmp_path, "--dest", str(unity_dest), *args)
    assert res.returncode == 2
    assert expected in res.stderr
    assert not (tmp_path / "gh.log").exists()  # refused before asking GitHub


def test_fetch_without_gh_says_how_to_get_it(tmp_path: Path, unity_dest: Path) -> None:
    # Only what the script needs before it looks for gh.
    bare = tmp_path / "bare"
    bare.mkdir()
    for tool in ("dirname",):
        found = shutil.which(tool)
        assert found is not None
        (bare / tool).symlink_to(found)
    res = _fetch(tmp_path, "--dest", str(unity_dest), "--latest", path=str(bare))
    assert res.returncode == 2
    assert "the GitHub CLI 'gh' is not on PATH" in res.stderr
    assert "apt-get install gh" in res.stderr and "gh auth login" in res.stderr


def _tree(root: Path) -> dict[str, tuple[str, bool]]:
    return {
        str(p.relative_to(root)): (p.read_text(), os.access(p, os.X_OK))
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_fetch_unpacks_artifacts_into_the_layout(tmp_path: Path, unity_dest: Path) -> None:
    res = _fetch(tmp_path, "--dest", str(unity_dest), "--run", "777")
    assert res.returncode == 0, res.stderr
    for lib in ("mirror", "ngo"):
        for track in ("current", "thesis"):
            for role in ("server", "client"):
                exe = unity_dest / lib / "Builds" / track / role / f"netstick-{lib}"
                assert exe.read_text() == f"player of netstick-{lib}-{track}-{role} run 777"
                assert os.access(exe, os.X_OK), exe  # the executable bit restored
                assert (exe.parent / f"netstick-{lib}_Data" / "globalgamemanagers").is_file()
                assert (
                    f"{lib}/Builds/{track}/{role}/netstick-{lib}  (3 files, sha256 " in res.stdout
                )
    assert "8 build(s) of run 777 of build-prototypes.yml" in res.stdout, res.stdout
    assert not (unity_dest / "nfe" / "Builds").exists()  # not in the run
    [call] = [json.loads(line) for line in (tmp_path / "gh.log").read_text().splitlines()]
    assert call[:3] == ["run", "download", "777"]
    assert call[call.index("--pattern") + 1] == "netstick-*"
    # Idempotent: a second fetch leaves the same tree, and nothing of an older build remains.
    before = _tree(unity_dest)
    stale = unity_dest / "mirror" / "Builds" / "current" / "server" / "old-file"
    stale.write_text("from an older build")
    again = _fetch(tmp_path, "--dest", str(unity_dest), "--run", "777")
    assert again.returncode == 0, again.stderr
    assert _tree(unity_dest) == before
    assert not list(tmp_path.glob("netstick-unity-builds.*"))  # its temporary directory


def test_fetch_latest_and_filters(tmp_path: Path, unity_dest: Path) -> None:
    res = _fetch(tmp_path, "--dest", str(unity_dest), "--track", "thesis", "ngo")
    assert res.returncode == 0, res.stderr
    got = sorted(
        str(p.relative_to(unity_dest)) for p in unity_dest.rglob("netstick-*") if p.is_file()
    )
    assert got == ["ngo/Builds/thesis/client/netstick-ngo", "ngo/Builds/thesis/server/netstick-ngo"]
    calls = [json.loads(line) for line in (tmp_path / "gh.log").read_text().splitlines()]
    assert calls[0][:2] == ["run", "list"] and "build-prototypes.yml" in calls[0]
    assert calls[1][:3] == ["run", "download", "4242"]  # the latest successful run on main


def test_fetch_errors_name_the_run_and_what_it_had(tmp_path: Path, unity_dest: Path) -> None:
    none = _fetch(tmp_path, "--dest", str(unity_dest), "--latest", env={"FAKE_GH_LATEST": ""})
    assert none.returncode == 2
    assert "no successful run of build-prototypes.yml on main" in none.stderr
    nfe = _fetch(tmp_path, "--dest", str(unity_dest), "--run", "5", "nfe")
    assert nfe.returncode == 2
    assert (
        "no artifact of run 5 of build-prototypes.yml is a netstick-<lib>-<track>-<role> for nfe"
        in nfe.stderr
    )
    assert "netstick-mirror-current-server" in nfe.stderr
    broken = _fetch(
        tmp_path,
        "--dest",
        str(unity_dest),
        "--run",
        "6",
        env={"FAKE_GH_ARTIFACTS": "netstick-mirror-current-server", "FAKE_GH_NOPROGRAM": "1"},
    )
    assert broken.returncode == 2, broken.stderr
    assert "artifact netstick-mirror-current-server of run 6 of build-prototypes.yml has no " in (
        broken.stderr
    )
    odd = _fetch(
        tmp_path, "--dest", str(unity_dest), "--run", "7", env={"FAKE_GH_ARTIFACTS": "netstick-x"}
    )
    assert odd.returncode == 2
    assert "skipped artifact netstick-x: not netstick-<lib>-<track>-<server|client>" in odd.stderr


def test_fetch_from_downloaded_artifacts_needs_no_gh(tmp_path: Path, unity_dest: Path) -> None:
    """--from unpacks what actions/download-artifact left (nightly.yml's seam), without gh."""
    downloaded = tmp_path / "downloaded"
    art = downloaded / "netstick-nfe-current-client"
    (art / "netstick-nfe_Data").mkdir(parents=True)
    (art / "netstick-nfe").write_text("player")
    bare = tmp_path / "bare"
    bare.mkdir()
    for tool in ("dirname", "rm", "mkdir", "cp", "chmod", "mv", "sha256sum", "cut",
                 "find", "wc", "basename"):  # fmt: skip
        found = shutil.which(tool)
        assert found is not None, tool
        (bare / tool).symlink_to(found)
    res = _fetch(tmp_path, "--dest", str(unity_dest), "--from", str(downloaded), path=str(bare))
    assert res.returncode == 0, res.stderr
    exe = unity_dest / "nfe" / "Builds" / "current" / "client" / "netstick-nfe"
    assert exe.read_text() == "player" and os.access(exe, os.X_OK)
    assert f"1 build(s) in {downloaded}" in res.stdout
    assert not (tmp_path / "gh.log").exists()


def test_provenance_of_a_version_built_elsewhere(tmp_path: Path) -> None:
    """A thesis-track run records both of its programs with their sha256, who built them and
    the manifest's lock files (it has no module files of its own)."""
    manifest = _unity_manifest(tmp_path, "ngo")
    doc = yaml.safe_load(manifest.read_text())
    doc["lock_files"] = ["tracks/thesis/Packages/manifest.json"]
    manifest.write_text(yaml.safe_dump(doc))
    lock = manifest.parent / "tracks" / "thesis" / "Packages" / "manifest.json"
    lock.parent.mkdir(parents=True)
    lock.write_text('{"dependencies": {}}')
    _install_builds(manifest, "thesis")
    (manifest.parent / "Builds/thesis/client/netstick-ngo").write_text("the client player")
    man = manifests.load(manifest).for_version("utp", "1.9.1")
    record = prototype_record.prototype_record(man, tmp_path)
    sha = {
        role: hashlib.sha256(
            (manifest.parent / f"Builds/thesis/{role}/netstick-ngo").read_bytes()
        ).hexdigest()
        for role in ("server", "client")
    }
    assert record["executable"]["sha256"] == sha["server"]
    assert record["client_executable"]["sha256"] == sha["client"]
    assert record["client_executable"]["path"] == (
        "prototypes/unity/ngo/Builds/thesis/client/netstick-ngo"
    )
    assert record["build_external"] == EXTERNAL and record["build_command"] is None
    assert record["library_build"] == {
        "library": "com.unity.netcode.gameobjects",
        "version": "1.9.1",
    }
    assert [lf["path"] for lf in record["lock_files"]] == [
        "prototypes/unity/ngo/tracks/thesis/Packages/manifest.json"
    ]


def test_prototype_flags_are_declared_and_passable_as_extra_flags() -> None:
    """Each Unity manifest declares the host's own flags (RateSettings) under prototype_flags, so
    a campaign can set frame and send rates with extra flags; an undeclared flag stays refused
    and the message names both lists."""
    rates = (
        REPO / "prototypes" / "unity" / "Netstick.Unity" / "Runtime" / "RateSettings.cs"
    ).read_text()
    host_flags = set(re.findall(r'Flag\s*=\s*"-?([a-z-]+)"', rates))
    assert host_flags == {"target-frame-rate", "send-rate"}
    cell = {"transport": "kcp", "players": 1, "workload": "idle"}
    for lib in ("mirror", "fishnet", "ngo", "nfe"):
        man = manifests.load(REPO / "prototypes" / "unity" / lib / "prototype.yaml")
        assert set(man.prototype_flags) == host_flags, lib
    mirror = manifests.load(REPO / "prototypes" / "unity" / "mirror" / "prototype.yaml")
    argv = server_argv(
        mirror, {**cell, "extra_server_flags": ["-send-rate", "30", "-target-frame-rate=120"]},
        host="h", port=1, log_dir="l",
    )  # fmt: skip
    assert argv[-3:] == ["-send-rate", "30", "-target-frame-rate=120"]
    with pytest.raises(ValueError, match=r"'-fps' is not .* prototype_flags: -target-frame-rate"):
        server_argv(
            mirror, {**cell, "extra_server_flags": ["-fps", "30"]}, host="h", port=1, log_dir="l"
        )
    reference = manifests.load(REPO / "prototypes" / "reference" / "prototype.yaml")
    with pytest.raises(ValueError, match=r"'-send-rate' is not .* prototype_flags: none"):
        server_argv(
            reference, {**cell, "extra_server_flags": ["-send-rate", "30"]},
            host="h", port=1, log_dir="l",
        )  # fmt: skip
