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
        conformance.ConformanceError, match=r"is missing; build it with `make fake`"
    ):
        conformance.check_prototype(man, "tcp")
    with pytest.raises(ValueError, match="no transport 'quic'"):
        conformance.check_prototype(man, "quic")


def test_cli_reports_bad_manifest_and_transport(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "prototype.yaml"
    bad.write_text("name: x\n")
    assert cli_main(["check-prototype", str(bad)]) == 2
    assert "contract_schema: missing" in capsys.readouterr().err
    assert cli_main(["check-prototype", str(FAKE_MANIFEST), "--transport", "quic"]) == 2
    assert "--transport quic: expected names from" in capsys.readouterr().err
