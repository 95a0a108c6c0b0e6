"""The record of the prototype a run starts (workflow.harness.prototype_record), from its
manifest alone: the lock files it names, the launcher of a script started directly (its #!
line), and an engine's build run by its engine."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import yaml

from prototypes.contract import manifest as manifests
from workflow.harness import prototype_record

from support.paths import FAKE_MANIFEST, REPO
from support.paths import FAKE_PROTOTYPE as FAKE_SCRIPT


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_manifest_names_its_own_lock_files(tmp_path: Path) -> None:
    doc = yaml.safe_load(FAKE_MANIFEST.read_text())
    doc["lock_files"] = ["packages.lock.json", "missing.lock"]
    (tmp_path / "packages.lock.json").write_text('{"dependencies": {}}\n')
    shutil.copy(FAKE_SCRIPT, tmp_path / "fake_prototype.py")
    path = tmp_path / "prototype.yaml"
    path.write_text(yaml.safe_dump(doc))
    record = prototype_record.prototype_record(manifests.load(path), REPO)
    locks = {Path(lf["path"]).name: lf for lf in record["lock_files"]}
    assert locks["packages.lock.json"]["sha256"] == _sha(tmp_path / "packages.lock.json")
    assert locks["missing.lock"]["sha256"] is None
    assert "not available" in locks["missing.lock"]["note"]


def test_a_script_started_directly_has_its_interpreter_line_as_launcher(tmp_path: Path) -> None:
    doc = yaml.safe_load(FAKE_MANIFEST.read_text())
    del doc["launcher"]
    script = tmp_path / "fake_prototype.py"
    script.write_text("#!/usr/bin/env python3\n" + FAKE_SCRIPT.read_text())
    path = tmp_path / "prototype.yaml"
    path.write_text(yaml.safe_dump(doc))
    record = prototype_record.prototype_record(manifests.load(path), REPO)
    assert record["executable"]["sha256"] == _sha(script)
    interpreter = Path(shutil.which("python3") or "python3").resolve()
    assert record["launcher"]["from"] == "#! line of the executable"
    assert record["launcher"]["sha256"] == _sha(interpreter)
    assert record["runtime"].startswith("Python 3.")


def test_an_engine_build_is_run_by_its_engine(tmp_path: Path) -> None:
    doc = yaml.safe_load(FAKE_MANIFEST.read_text())
    del doc["launcher"]
    doc.update(language="csharp", engine="unity 6000.0.23f1", executable="Build/player.x86_64")
    (tmp_path / "Build").mkdir()
    (tmp_path / "Build" / "player.x86_64").write_bytes(b"\x7fELF not really a player")
    path = tmp_path / "prototype.yaml"
    path.write_text(yaml.safe_dump(doc))
    record = prototype_record.prototype_record(manifests.load(path), REPO)
    assert (record["runtime"], record["launcher"]) == ("unity 6000.0.23f1", None)
    assert record["executable"]["sha256"] == _sha(tmp_path / "Build" / "player.x86_64")
    assert "go_modules" not in record and record["lock_files"] == []
