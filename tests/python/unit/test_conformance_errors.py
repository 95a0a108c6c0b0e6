"""The conformance checker refuses what it cannot check before it starts anything: a missing
executable (naming its build command), a transport the manifest lacks, a bad manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from prototypes.contract import conformance
from prototypes.contract import manifest as mf
from workflow.cli.main import main as cli_main

from support.paths import FAKE_MANIFEST


def test_missing_executable_is_a_clear_error(tmp_path: Path) -> None:
    doc: dict[str, Any] = yaml.safe_load(FAKE_MANIFEST.read_text())
    doc["executable"] = "no-such-program"
    doc["build"] = {"command": ["make", "fake"]}
    man = mf.parse(doc, tmp_path / "prototype.yaml")
    with pytest.raises(
        conformance.ConformanceError,
        match=r"missing: .*no-such-program \(.*prototype.yaml: executable\); build it with "
        r"`make fake`",
    ):
        conformance.check_prototype(man, "tcp")
    with pytest.raises(ValueError, match="no transport 'quic'"):
        conformance.check_prototype(man, "quic")


def test_missing_external_builds_say_who_builds_them_and_how_to_fetch_them(
    tmp_path: Path,
) -> None:
    """A prototype built elsewhere (build.external) with a separate client program: both
    missing programs are named, with who builds them and the fetch command."""
    doc: dict[str, Any] = yaml.safe_load(FAKE_MANIFEST.read_text())
    doc["executable"] = "server/game-server"
    doc["client_executable"] = "client/game-client"
    doc["build"] = {"external": "the CI's build job", "fetch": ["./fetch.sh", "--latest"]}
    man = mf.parse(doc, tmp_path / "prototype.yaml")
    with pytest.raises(conformance.ConformanceError) as caught:
        conformance.check_prototype(man, "tcp")
    text = str(caught.value)
    assert "server/game-server (" in text and "prototype.yaml: executable)" in text
    assert "client/game-client (" in text and "prototype.yaml: client_executable)" in text
    assert (
        "they are built elsewhere (the CI's build job); fetch them with `./fetch.sh --latest`"
        in text
    )
    # The server's program alone present: only the client's is named.
    (tmp_path / "server").mkdir()
    (tmp_path / "server" / "game-server").write_text("")
    with pytest.raises(conformance.ConformanceError) as caught:
        conformance.check_prototype(man, "tcp")
    assert "game-server" not in str(caught.value) and "game-client" in str(caught.value)


def test_cli_reports_bad_manifest_and_transport(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "prototype.yaml"
    bad.write_text("name: x\n")
    assert cli_main(["check-prototype", str(bad)]) == 2
    assert "contract_schema: missing" in capsys.readouterr().err
    assert cli_main(["check-prototype", str(FAKE_MANIFEST), "--transport", "quic"]) == 2
    assert "--transport quic: expected names from" in capsys.readouterr().err
    assert cli_main(["check-prototype", str(FAKE_MANIFEST), "--skip", "server-lost,colour"]) == 2
    assert "--skip colour: expected checks from ready-line, port-in-use" in capsys.readouterr().err
    assert cli_main(["check-prototype", str(FAKE_MANIFEST), "--library-version", "9.9"]) == 2
    err = capsys.readouterr().err
    assert "--library-version:" in err and "has no version '9.9'" in err


def test_the_exit_4_line_must_name_player_transport_and_timeout() -> None:
    from prototypes.contract.conformance.scenarios import exit4_line_problem

    good = "netstick-ref: player 0 over tcp: could not connect within -connect-timeout-s 1: refused"
    assert exit4_line_problem(f"starting\n{good}\n", 0, "tcp", 1.0) is None
    assert exit4_line_problem("player=0 transport=tcp timeout 1.0 s\n", 0, "tcp", 1.0) is None
    bare = exit4_line_problem("fake: player 0 could not connect\n", 0, "tcp", 1.0)
    assert bare is not None and "the transport (tcp), the timeout (1)" in bare
    # The three on different lines are not "one line"; another player's number is not this one.
    split = exit4_line_problem("player 0 failed\nover tcp\nwithin 1 s\n", 0, "tcp", 1.0)
    assert split is not None and "no stderr line names" in split
    assert exit4_line_problem("player 10 over tcp within 1 s\n", 0, "tcp", 1.0) is not None
    assert exit4_line_problem("player 0 over tcp within 10 s\n", 0, "tcp", 1.0) is not None
