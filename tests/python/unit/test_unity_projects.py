"""The Unity projects' static checks (prototypes.contract.unity, `netstick check-unity`): they pass
on the repository and each one fails on a crafted bad file, naming the file and line. (The shared
host run under mono: e2e/toolchain/test_unity_host_on_mono.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from prototypes.contract import unity
from workflow.cli.main import main

from support.paths import REPO

UNITY = REPO / "prototypes" / "unity"
LIBS = ("mirror", "fishnet", "ngo", "nfe")

GOOD_CS = b"""using System;
namespace Netstick.Sample
{
#if UNITY_SERVER
    public sealed class Role { public const bool Server = true; }
#else
    public sealed class Role { public const bool Server = false; }
#endif
    public sealed class Probe
    {
#if NETSTICK_TRACE
        int traced;
#endif
        public int Twice(int x) { return x * 2; }
        public record Point(int X, int Y);
        public int Last(int[] a) => a[^1];
    }
}
"""


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def manifest(deps: dict[str, str]) -> str:
    return json.dumps({"dependencies": deps}, indent=2)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A repository with two good projects on the current track and the shared core package."""
    unity_dir = tmp_path / "prototypes" / "unity"
    write(
        unity_dir / "Netstick.Core" / "package.json",
        json.dumps({"name": "com.netstick.core", "version": "1.0.0", "unity": "2022.3"}),
    )
    for lib in ("alpha", "beta"):
        project = unity_dir / lib
        track = project / "tracks" / "current"
        write(
            track / "Packages" / "manifest.json",
            manifest(
                {
                    "com.netstick.core": "file:../../Netstick.Core",
                    "com.unity.transport": "2.6.0",
                    "com.unity.netcode": "1.0.0-pre.65",
                    "com.firstgeargames.fishnet": (
                        "https://github.com/FirstGearGames/FishNet.git?path=Assets/FishNet#4.7.2"
                    ),
                }
            ),
        )
        write(track / "ProjectSettings" / "ProjectVersion.txt", "m_EditorVersion: 6000.3.18f1\n")
        write(project / "Assets" / "Netstick" / "Sample.cs", GOOD_CS)
    (tmp_path / ".git").mkdir()
    return unity_dir


def messages(unity_dir: Path) -> list[str]:
    return [str(v) for v in unity.check_tree(unity_dir).violations]


def test_crafted_good_tree_passes(tree: Path) -> None:
    report = unity.check_tree(tree)
    assert report.violations == []
    assert report.cs_files == 2
    assert report.package_files == 3
    assert sorted(report.project_versions.values()) == ["6000.3.18f1", "6000.3.18f1"]


def test_repository_projects_pass() -> None:
    report = unity.check_tree(UNITY)
    assert [str(v) for v in report.violations] == []
    # Every library's project is there on both tracks, with C# to check.
    for lib in LIBS:
        for track in unity.TRACK_LINES:
            base = UNITY / lib / "tracks" / track
            assert (base / "Packages" / "manifest.json").is_file()
            assert base / "ProjectSettings" / "ProjectVersion.txt" in report.project_versions
        assert list((UNITY / lib / "Assets").rglob("*.cs")), lib
    assert report.cs_files > 20


def test_cli_passes_on_repository_and_fails_on_bad_tree(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check-unity", str(UNITY)]) == 0
    assert "parsed, pinned and consistent" in capsys.readouterr().out
    write(tree / "alpha" / "Assets" / "Broken.cs", "class C { void M() { int x = ; } }\n")
    assert main(["check-unity", str(tree)]) == 1
    out = capsys.readouterr()
    assert "Broken.cs:1: syntax error" in out.out
    assert "1 problem(s)" in out.err
    assert main(["check-unity", str(tree / "missing")]) == 2


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("^2.6.0", "expected an exact version"),
        ("~2.6.0", "expected an exact version"),
        ("2.x", "expected an exact version"),
        ("*", "expected an exact version"),
        ("latest", "expected an exact version"),
        (">=1.0.0", "expected an exact version"),
        ("2.6", "expected an exact version"),
        ("https://github.com/FirstGearGames/FishNet.git?path=Assets/FishNet", "must end in #<tag>"),
        (
            "https://github.com/FirstGearGames/FishNet.git?path=Assets/FishNet#main",
            "looks like a branch",
        ),
        ("git@github.com:o/r.git", "must end in #<tag>"),
        ("file:../../../../../outside", "expected a directory inside the repository"),
        ("file:../../NoSuchPackage", "expected a package directory"),
    ],
)
def test_unpinned_manifest_versions_fail(tree: Path, version: str, expected: str) -> None:
    path = tree / "beta" / "tracks" / "current" / "Packages" / "manifest.json"
    deps = json.loads(path.read_text())["dependencies"]
    deps["com.unity.transport"] = version
    path.write_text(manifest(deps))
    found = messages(tree)
    assert len(found) == 1, found
    assert found[0].startswith(f"{path}:")
    assert "dependency com.unity.transport" in found[0]
    assert expected in found[0]


@pytest.mark.parametrize(
    "version",
    [
        "https://github.com/FirstGearGames/FishNet.git?path=Assets/FishNet#4.2.2",
        "https://github.com/o/r.git#v1.0",
        "https://github.com/o/r.git#0123abcd",
        "https://github.com/o/r.git#0123456789abcdef0123456789abcdef01234567",
    ],
)
def test_pinned_git_urls_pass(version: str) -> None:
    assert unity.version_problem(version) is None


def test_git_url_line_is_reported(tree: Path) -> None:
    path = tree / "alpha" / "tracks" / "current" / "Packages" / "manifest.json"
    deps = json.loads(path.read_text())["dependencies"]
    deps["com.firstgeargames.fishnet"] = "https://github.com/FirstGearGames/FishNet.git"
    path.write_text(manifest(deps))
    (violation,) = unity.check_tree(tree).violations
    line = path.read_text().splitlines()[violation.line - 1]
    assert "com.firstgeargames.fishnet" in line


def test_lock_file_and_package_json(tree: Path) -> None:
    lock = tree / "alpha" / "tracks" / "current" / "Packages" / "packages-lock.json"
    entries = {
        "com.unity.transport": {
            "version": "2.6.0",
            "depth": 1,
            "source": "registry",
            "dependencies": {"com.unity.burst": "1.8.19"},
        },
        "com.netstick.core": {"version": "file:../../Netstick.Core", "depth": 0, "source": "local"},
        "com.firstgeargames.fishnet": {
            "version": "https://github.com/FirstGearGames/FishNet.git?path=Assets/FishNet#4.7.2",
            "depth": 0,
            "source": "git",
            "hash": "0123456789abcdef0123456789abcdef01234567",
        },
    }
    write(lock, json.dumps({"dependencies": entries}, indent=2))
    assert messages(tree) == []
    entries["com.unity.transport"]["dependencies"] = {"com.unity.burst": "^1.8.19"}
    del entries["com.firstgeargames.fishnet"]["hash"]
    write(lock, json.dumps({"dependencies": entries}, indent=2))
    found = messages(tree)
    assert any("com.unity.transport -> com.unity.burst" in m for m in found), found
    assert any("needs its hash" in m for m in found), found
    package = tree / "Netstick.Core" / "package.json"
    package.write_text(json.dumps({"name": "com.netstick.core", "version": "1.0"}))
    assert any("package.json" in m and "version" in m for m in messages(tree))


def test_invalid_json_names_the_line(tree: Path) -> None:
    path = tree / "alpha" / "tracks" / "current" / "Packages" / "manifest.json"
    path.write_text('{\n  "dependencies": {\n    "a": "1.0.0",\n  }\n}\n')
    (found,) = messages(tree)
    assert found.startswith(f"{path}:4: invalid JSON")
    write(tree / "alpha" / "Assets" / "A.asmdef", "{ nope")
    assert any(
        m.startswith(f"{tree / 'alpha' / 'Assets' / 'A.asmdef'}:1: invalid JSON")
        for m in messages(tree)
    )


def test_statement_splitting_if_fails(tree: Path) -> None:
    source = """class C
{
    int M(int a)
    {
        int y = a
#if EXTRA
            + 3
#endif
        ;
        return y;
    }
}
"""
    path = write(tree / "alpha" / "Assets" / "Split.cs", source)
    found = [m for m in messages(tree) if "Split.cs" in m]
    assert f"{path}:6: #if inside a variable declarator" in "\n".join(found), found


def test_if_inside_method_body_fails_even_when_it_parses(tree: Path) -> None:
    source = """class C
{
    void M()
    {
#if UNITY_SERVER
        Start();
#else
        Join();
#endif
    }
}
"""
    path = write(tree / "alpha" / "Assets" / "Body.cs", source)
    found = messages(tree)
    # The parse itself is clean: the placement rule alone refuses it.
    assert not any("syntax error" in m for m in found), found
    assert f"{path}:5: #if inside a block" in "\n".join(found), found


def test_syntax_error_is_reported_with_its_line(tree: Path) -> None:
    source = (
        "namespace N\n{\n    class C\n    {\n        void M() { var x = new int[; }\n    }\n}\n"
    )
    path = write(tree / "beta" / "Assets" / "Bad.cs", source)
    found = messages(tree)
    assert found and all(m.startswith(f"{path}:5: syntax error") for m in found), found


def test_project_versions_must_agree_within_a_track(tree: Path) -> None:
    path = tree / "beta" / "tracks" / "current" / "ProjectSettings" / "ProjectVersion.txt"
    path.write_text(
        "m_EditorVersion: 6000.3.17f1\nm_EditorVersionWithRevision: 6000.3.17f1 (abc)\n"
    )
    found = messages(tree)
    assert len(found) == 2, found
    assert all("track current: projects disagree on the editor" in m for m in found)
    assert all("6000.3.17f1" in m and "6000.3.18f1" in m for m in found)


def test_project_version_must_be_of_its_track_line(tree: Path) -> None:
    for lib in ("alpha", "beta"):
        write(
            tree / lib / "tracks" / "thesis" / "ProjectSettings" / "ProjectVersion.txt",
            "m_EditorVersion: 2022.3.16f1\n",
        )
    assert messages(tree) == []
    path = tree / "alpha" / "tracks" / "thesis" / "ProjectSettings" / "ProjectVersion.txt"
    path.write_text("m_EditorVersion: 6000.0.23f1\n")
    found = messages(tree)
    assert f"{path}:1: m_EditorVersion 6000.0.23f1: track thesis uses Unity 2022.3.*" in found
    path.write_text("m_EditorVersion: latest\n")
    assert any("expected a version like 6000.3.18f1" in m for m in messages(tree))
    unknown = tree / "alpha" / "tracks" / "nightly" / "ProjectSettings" / "ProjectVersion.txt"
    write(unknown, "m_EditorVersion: 6000.3.18f1\n")
    assert any("unknown track 'nightly'" in m for m in messages(tree))


def test_generated_and_vendored_directories_are_skipped(tree: Path) -> None:
    broken = "class {"
    for rel in ("Library/PackageCache/x/A.cs", "Assets/Mirror/Core/B.cs", "Builds/current/C.cs"):
        write(tree / "alpha" / rel, broken)
    assert messages(tree) == []
    write(tree / "alpha" / "Assets" / "Netstick" / "D.cs", broken)
    assert messages(tree)


def test_manifests_describe_the_unity_projects() -> None:
    """Each library's prototype.yaml: C#, its engine, the builds of the layout, the thesis track."""
    for lib in LIBS:
        doc = yaml.safe_load((UNITY / lib / "prototype.yaml").read_text())
        assert doc["name"] == f"unity-{lib}"
        assert doc["language"] == "csharp"
        assert doc["executable"] == f"Builds/current/server/netstick-{lib}"
        assert doc["client_executable"] == f"Builds/current/client/netstick-{lib}"
        assert doc["library_builds"]["executable"] == f"Builds/thesis/server/netstick-{lib}"
        assert all("reliable_ordered" in t for t in doc["transports"])
        assert "-batchmode" in doc["command_prefix"]


def test_projects_share_the_host_and_build_as_one_local_package() -> None:
    """The host (options, rates, logs, exit codes) and the build method are one code base, the
    local package com.netstick.unity (prototypes/unity/Netstick.Unity): every track of every
    project names it and Netstick.Core by a path inside the repository, each library's runtime
    assembly references both, and no project holds a copy of either."""
    shared = UNITY / "Netstick.Unity"
    assert json.loads((shared / "package.json").read_text())["name"] == "com.netstick.unity"
    runtime = json.loads((shared / "Runtime" / "Netstick.Unity.asmdef").read_text())
    assert runtime["name"] == "Netstick.Unity" and runtime["references"] == ["Netstick.Core"]
    editor = json.loads((shared / "Editor" / "Netstick.Editor.asmdef").read_text())
    assert editor["includePlatforms"] == ["Editor"]
    assert (shared / "Editor" / "Build.cs").is_file()
    shared_names = {p.name for p in shared.rglob("*.cs")}
    for lib in LIBS:
        for track in sorted((UNITY / lib / "tracks").iterdir()):
            deps = json.loads((track / "Packages" / "manifest.json").read_text())["dependencies"]
            assert deps["com.netstick.core"] == "file:../../Netstick.Core", (lib, track.name)
            assert deps["com.netstick.unity"] == "file:../../Netstick.Unity", (lib, track.name)
        (asmdef,) = (UNITY / lib / "Assets" / "Netstick" / "Runtime").glob("*.asmdef")
        assert {"Netstick.Core", "Netstick.Unity"} <= set(
            json.loads(asmdef.read_text())["references"]
        )
        copies = shared_names & {p.name for p in (UNITY / lib / "Assets").rglob("*.cs")}
        assert not copies, (lib, sorted(copies))


def test_each_project_has_one_bootstrap_naming_its_manifest() -> None:
    """One concrete NetstickHost per project (the build puts it into the generated scene), an
    asmdef that references Netstick.Core, and the adapter's prototype name equal to the
    manifest's, since meta.json records the adapter's."""
    for lib in LIBS:
        runtime = UNITY / lib / "Assets" / "Netstick" / "Runtime"
        sources = {p: p.read_text() for p in runtime.glob("*.cs")}
        hosts = [p.name for p, text in sources.items() if re.search(r":\s*NetstickHost\b", text)]
        assert len(hosts) == 1, (lib, hosts)
        (asmdef,) = runtime.glob("*.asmdef")
        assert "Netstick.Core" in json.loads(asmdef.read_text())["references"]
        name = yaml.safe_load((UNITY / lib / "prototype.yaml").read_text())["name"]
        prototypes = {
            m
            for text in sources.values()
            for m in re.findall(r'Prototype \{ get \{ return "([^"]+)"', text)
        }
        assert prototypes == {name}, lib


def test_names_the_core_shares_with_an_imported_namespace_fail_unless_aliased(tree: Path) -> None:
    write(
        tree / "Netstick.Core" / "Types.cs",
        "namespace Netstick.Core\n{\n    public sealed class World { }\n"
        "    public sealed class EventLog { }\n}\n",
    )
    source = """using System.Diagnostics;
using Netstick.Core;
using Unity.Entities;

namespace Netstick.Unity.Nfe
{
    sealed class Worlds
    {
        public World World;
        EventLog log = EventLog.Create("dir", "server");
        Unity.Entities.World qualified;
        void M() { var w = other.World; }
    }
}
"""
    path = write(tree / "alpha" / "Assets" / "Netstick" / "Worlds.cs", source)
    assert messages(tree) == [
        f"{path}:9: World is ambiguous here: both Netstick.Core and Unity.Entities define it "
        "(qualify it or add `using World = ...;`)",
        f"{path}:10: EventLog is ambiguous here: both Netstick.Core and System.Diagnostics define "
        "it (qualify it or add `using EventLog = ...;`)",
        f"{path}:10: EventLog is ambiguous here: both Netstick.Core and System.Diagnostics define "
        "it (qualify it or add `using EventLog = ...;`)",
    ]
    aliased = source.replace(
        "using Unity.Entities;\n",
        "using Unity.Entities;\nusing World = Unity.Entities.World;\n"
        "using EventLog = Netstick.Core.EventLog;\n",
    )
    path.write_text(aliased)
    assert messages(tree) == []
    # The core's own files are not held to it: inside Netstick.Core its types win.
    write(
        tree / "Netstick.Core" / "Meta.cs",
        "using System.Diagnostics;\nnamespace Netstick.Core\n{\n"
        "    sealed class M { EventLog l; }\n}\n",
    )
    assert messages(tree) == []
