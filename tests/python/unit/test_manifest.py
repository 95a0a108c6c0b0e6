"""Prototype manifests: validation with named key paths, argv rendering, the player split."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from prototypes.contract import manifest as mf
from prototypes.contract.argv import (
    client_argvs,
    client_split,
    optional_flag_args,
    process_env,
    server_argv,
)

from support.manifest_variants import Doc, load_variant
from support.paths import FAKE_MANIFEST, REPO

REFERENCE_MANIFEST = REPO / "prototypes" / "reference" / "prototype.yaml"


def problems_of(tmp_path: Path, change: Callable[[Doc], None]) -> list[str]:
    with pytest.raises(mf.ManifestError) as info:
        load_variant(tmp_path, change)
    err = info.value
    assert err.path == str((tmp_path / "prototype.yaml").resolve())
    assert str(err).startswith(err.path + ": ")  # every line names the file
    return err.problems


# -- valid manifests ---------------------------------------------------------------------------


def test_reference_manifest_is_valid() -> None:
    man = mf.load(REFERENCE_MANIFEST)
    assert man.name == "reference"
    assert man.transport_names == ("tcp", "udp", "kcp", "enet", "quic", "ws", "webrtc")
    assert man.players_per_process == 500
    assert man.executable == REPO / "prototypes" / "reference" / "bin" / "netstick-ref"
    assert man.directory == REFERENCE_MANIFEST.parent
    assert set(man.optional_flags) == {
        "probe-hz", "connect-interval-ms", "connect-parallel", "connect-timeout-s", "send-slack-us"
    }  # fmt: skip
    assert "stream" in man.workloads and "pingpong" in man.workloads


def test_reference_manifest_versions_match_go_mod() -> None:
    """Library versions in the manifest are the ones go.mod pins (no silent drift)."""
    go_mod = (REPO / "prototypes" / "reference" / "go.mod").read_text()
    pinned = dict(re.findall(r"^\s+(\S+) (v\S+)", go_mod, flags=re.M))
    man = mf.load(REFERENCE_MANIFEST)
    for t in man.transports:
        if t.library.startswith("github.com/"):
            assert pinned[t.library] == t.version, t.name
    for lib, version in man.library_versions.items():
        if lib in pinned:
            assert pinned[lib] == version, lib
    go_version = re.search(r"^go (\S+)", go_mod, flags=re.M)
    assert go_version is not None
    assert man.library_versions["go"] == f"go{go_version.group(1)}"
    assert man.transport("enet").version == "1.3.17"
    assert set(man.transport("enet").native_channels) == {"reliable", "unreliable"}


def test_fake_manifest_is_valid_and_runs_the_script_with_this_python() -> None:
    man = mf.load(FAKE_MANIFEST)
    assert man.binary_argv() == [sys.executable, str(FAKE_MANIFEST.with_name("fake_prototype.py"))]


def test_every_schema_key_has_a_description() -> None:
    schema = json.loads(mf.SCHEMA_PATH.read_text())
    missing: list[str] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for key, sub in node.get("properties", {}).items():
                if not sub.get("description"):
                    missing.append(f"{where}.{key}")
                walk(sub, f"{where}.{key}")
            if isinstance(node.get("items"), dict):
                walk(node["items"], f"{where}[]")

    walk(schema, "")
    assert missing == []


def test_paths_resolve_against_the_manifest_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO / "prototypes")
    man = mf.load("reference/prototype.yaml")  # relative to the working directory
    monkeypatch.chdir(tmp_path)
    assert man.path == REFERENCE_MANIFEST
    assert man.executable == REFERENCE_MANIFEST.parent / "bin" / "netstick-ref"


# -- broken manifests: every problem names its key path ----------------------------------------


def test_missing_key_is_named(tmp_path: Path) -> None:
    problems = problems_of(tmp_path, lambda d: d.pop("players_per_process"))
    assert len(problems) == 1
    assert problems[0].startswith("key players_per_process: missing; expected Most players")


def test_wrong_type_is_named_with_what_was_expected(tmp_path: Path) -> None:
    def change(d: Doc) -> None:
        d["players_per_process"] = "five hundred"

    assert problems_of(tmp_path, change) == [
        'key players_per_process: expected an integer >= 1, found "five hundred" (a string)'
    ]


def test_reliable_ordered_is_declared_per_transport(tmp_path: Path) -> None:
    """Order of the reliable channel is the library's property, declared in the manifest."""
    man = mf.load(REFERENCE_MANIFEST)
    assert {t.name: t.reliable_ordered for t in man.transports} == {
        "tcp": True, "udp": False, "kcp": True, "enet": True, "quic": True, "ws": True,
        "webrtc": True,
    }  # fmt: skip
    assert mf.load(FAKE_MANIFEST).transport("tcp").reliable_ordered is True

    def undeclared(d: Doc) -> None:
        del d["transports"][0]["reliable_ordered"]

    assert load_variant(tmp_path, undeclared).transport("tcp").reliable_ordered is None

    def words(d: Doc) -> None:
        d["transports"][0]["reliable_ordered"] = "yes"

    assert problems_of(tmp_path, words) == [
        'key transports.0.reliable_ordered: expected true or false, found "yes" (a string)'
    ]


def test_unquoted_version_number_gets_a_hint(tmp_path: Path) -> None:
    def change(d: Doc) -> None:
        d["library_versions"]["libenet"] = 1.2

    (problem,) = problems_of(tmp_path, change)
    assert problem.startswith(
        "key library_versions.libenet: expected a string, found 1.2 (a number)"
    )
    assert "quote it" in problem


def test_unknown_placeholder_is_named(tmp_path: Path) -> None:
    def change(d: Doc) -> None:
        d["client_command"][4] = "{transprot}"

    problems = problems_of(tmp_path, change)
    assert problems[0].startswith("key client_command.4: unknown placeholder {transprot}; expected")
    # the typo also removed {transport}, which a multi-transport prototype needs
    assert (
        "key client_command: missing placeholder {transport}; the harness must set it" in problems
    )


def test_client_only_placeholder_in_server_template(tmp_path: Path) -> None:
    def change(d: Doc) -> None:
        d["server_command"] += ["-players", "{players}"]

    (problem,) = problems_of(tmp_path, change)
    assert problem.startswith("key server_command.24: unknown placeholder {players}")


def test_list_placeholder_must_be_a_whole_element(tmp_path: Path) -> None:
    def change(d: Doc) -> None:
        d["server_command"][11] = "--{params}"

    (problem,) = problems_of(tmp_path, change)
    assert problem == (
        "key server_command.11: {params} stands for several arguments and must be a whole "
        "element, found '--{params}'"
    )


def test_unmatched_brace(tmp_path: Path) -> None:
    def change(d: Doc) -> None:
        d["server_command"][2] = "serv{er"

    (problem,) = problems_of(tmp_path, change)
    assert problem.startswith("key server_command.2: 'serv{er' has an unmatched brace")


def test_bad_transport_entry_is_named(tmp_path: Path) -> None:
    def change(d: Doc) -> None:
        del d["transports"][1]["library"]
        d["transports"][2]["native_channels"] = ["both"]
        d["transports"][3]["colour"] = "red"
        d["transports"][4]["name"] = "tcp"

    problems = problems_of(tmp_path, change)
    # The schema problems come first (the file is not interpreted further while they remain).
    assert problems == [
        "key transports.1.library: missing; expected The library that implements it "
        "(module path or package name).",
        'key transports.2.native_channels.0: expected one of reliable, unreliable, found "both" '
        "(a string)",
        "key transports.3.colour: unknown key; expected one of description, library, "
        "message_limits, name, native_channels, notes, options, reliable_ordered, "
        "server_lost_s, settings, variants, version, versions",
    ]
    problems = problems_of(tmp_path, lambda d: d["transports"][4].update(name="tcp"))
    assert problems == ["key transports.4.name: 'tcp' repeats an earlier transport"]


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    def change(d: Doc) -> None:
        d.pop("name")
        d["ready_timeout_s"] = 0
        d["workloads"].append("juggle")
        d["contract_schema"] = 2

    assert problems_of(tmp_path, change) == [
        "key name: missing; expected Short name of the prototype (lower case, digits, '.', '_', "
        "'-'), used in cell ids and reports; conventionally the name of the manifest's directory.",
        "key contract_schema: expected 1, found 2 (an integer)",
        "key ready_timeout_s: expected a number > 0, found 0 (an integer)",
        "key workloads.8: expected one of idle, active, wander, world, envmod, rpc-toggle, "
        'stream, pingpong, found "juggle" (a string)',
    ]


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "prototype.yaml"
    path.write_text("name: x\ntransports: [tcp\n")
    with pytest.raises(mf.ManifestError) as info:
        mf.load(path)
    assert "not valid YAML" in str(info.value) and "line 3" in str(info.value)


def test_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "prototype.yaml"
    path.write_text("- just\n- a list\n")
    with pytest.raises(mf.ManifestError) as info:
        mf.load(path)
    assert info.value.problems == [
        '(top level): expected a mapping, found ["just", "a list"] (a list)'
    ]


# -- rendering ---------------------------------------------------------------------------------


CELL: dict[str, Any] = {
    "transport": "kcp",
    "players": 1200,
    "workload": "stream",
    "params": {"size": 100, "rate": 60, "channel": "unreliable"},
    "transport_options": {"nodelay": 1},
    "duration_s": 30.0,
    "tick_rate_hz": 30,
    "run_id": "r7",
    "seed": 42,
    "extra_client_flags": ["-probe-hz", "5"],
}


def test_client_split_1200_into_500_500_200() -> None:
    assert client_split(1200, 500) == [(0, 500), (500, 500), (1000, 200)]
    assert client_split(500, 500) == [(0, 500)]
    assert client_split(1, 500) == [(0, 1)]
    assert client_split(1001, 500) == [(0, 500), (500, 500), (1000, 1)]
    with pytest.raises(ValueError, match="must be >= 1"):
        client_split(0, 500)


def test_client_argvs_split_players_over_processes() -> None:
    man = mf.load(REFERENCE_MANIFEST)
    argvs = client_argvs(man, CELL, host="10.77.0.2", port=7777, log_dir="/runs/x/logs")
    assert len(argvs) == 3

    def flag(argv: list[str], name: str) -> str:
        return argv[argv.index(name) + 1]

    assert [flag(a, "-players") for a in argvs] == ["500", "500", "200"]
    assert [flag(a, "-first-player") for a in argvs] == ["0", "500", "1000"]
    assert argvs[0] == [
        str(man.executable),
        "-role", "client", "-transport", "kcp", "-host", "10.77.0.2", "-port", "7777",
        "-players", "500", "-first-player", "0", "-workload", "stream",
        "-param", "size=100", "-param", "rate=60", "-param", "channel=unreliable",
        "-param", "t.nodelay=1",
        "-duration", "30", "-tick-rate", "30", "-log-dir", "/runs/x/logs",
        "-run-id", "r7", "-seed", "42", "-probe-hz", "5",
    ]  # fmt: skip


def test_server_argv_runs_until_sigterm() -> None:
    man = mf.load(REFERENCE_MANIFEST)
    argv = server_argv(man, CELL, host="0.0.0.0", port=9000, log_dir=Path("/l"))
    assert argv[argv.index("-duration") + 1] == "0"
    assert argv[argv.index("-host") + 1] == "0.0.0.0"
    assert "-players" not in argv and "-probe-hz" not in argv  # client flags stay on clients
    assert argv[-2:] == ["-seed", "42"]


def test_client_duration_keeps_fractions_and_drops_a_trailing_zero() -> None:
    man = mf.load(REFERENCE_MANIFEST)

    def duration(seconds: float) -> str:
        cell = {**CELL, "players": 1, "duration_s": seconds}
        (argv,) = client_argvs(man, cell, host="h", port=1, log_dir="l")
        return argv[argv.index("-duration") + 1]

    assert duration(2.5) == "2.5"
    assert duration(6.0) == "6"


def test_smaller_split_for_tests_but_never_larger() -> None:
    man = mf.load(REFERENCE_MANIFEST)
    cell = {**CELL, "players": 5}
    argvs = client_argvs(man, cell, host="h", port=1, log_dir="l", players_per_process=3)
    assert [a[a.index("-players") + 1] for a in argvs] == ["3", "2"]
    with pytest.raises(ValueError, match="exceeds the 500"):
        client_argvs(man, cell, host="h", port=1, log_dir="l", players_per_process=501)


def test_cell_checked_against_the_manifest() -> None:
    man = mf.load(FAKE_MANIFEST)
    base = {"transport": "tcp", "players": 1, "workload": "idle"}
    with pytest.raises(ValueError, match=r"transport 'quic' is not offered by .*fake-prototype"):
        server_argv(man, {**base, "transport": "quic"}, host="h", port=1, log_dir="l")
    with pytest.raises(ValueError, match="workload 'world' is not supported"):
        client_argvs(man, {**base, "workload": "world"}, host="h", port=1, log_dir="l")
    with pytest.raises(ValueError, match=r"'-probe-hz' is not an optional flag .* declares"):
        client_argvs(
            man, {**base, "extra_client_flags": ["-probe-hz", "1"]}, host="h", port=1, log_dir="l"
        )
    ref = mf.load(REFERENCE_MANIFEST)
    with pytest.raises(ValueError, match="extra_server_flags: '-verbose'"):
        server_argv(
            ref, {**base, "extra_server_flags": ["-verbose"]}, host="h", port=1, log_dir="l"
        )
    ok = {**base, "extra_client_flags": ["-connect-timeout-s=3", "-probe-hz", "0"]}
    assert client_argvs(ref, ok, host="h", port=1, log_dir="l")[0][-3:] == [
        "-connect-timeout-s=3", "-probe-hz", "0"
    ]  # fmt: skip


def test_launcher_prefix_and_braces(tmp_path: Path) -> None:
    """A Unity-like manifest: command_prefix after the executable, placeholders inside elements."""

    def change(d: Doc) -> None:
        d["executable"] = "build/Game.x86_64"
        d["launcher"] = ["taskset", "-c", "1"]
        d["command_prefix"] = ["-batchmode", "-nographics"]
        d["server_command"][18] = "-logFile={log_dir}/unity-{{server}}.log"

    man = load_variant(tmp_path, change)
    argv = server_argv(man, {"transport": "tcp"}, host="h", port=1, log_dir="/l")
    assert argv[:6] == [
        "taskset", "-c", "1", str(tmp_path / "build" / "Game.x86_64"), "-batchmode", "-nographics"
    ]  # fmt: skip
    assert "-logFile=/l/unity-{server}.log" in argv
    assert "{params}" not in argv and "-param" not in argv  # no params: the element vanishes


def test_process_env_adds_the_manifest_environment(tmp_path: Path) -> None:
    man = load_variant(tmp_path, lambda d: d.update(environment={"GOGC": "400"}))
    assert process_env(man, {"PATH": "/bin", "GOGC": "100"}) == {"PATH": "/bin", "GOGC": "400"}
    assert optional_flag_args(man, {"probe-hz": 2.5, "no-such": 1}) == ["-probe-hz", "2.5"]
