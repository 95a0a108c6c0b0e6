"""The netstick command: one parser, stage modules imported only by the command that needs them,
and bad flags refused with the flag named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from workflow.cli.main import build_parser, main


def test_parsing_a_command_imports_no_stage() -> None:
    code = (
        "import sys; from workflow.cli.main import build_parser; "
        "build_parser().parse_args(['stats', 'quick']); "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('stats', 'report', 'polars', 'scipy') or m.startswith('workflow.harness')); "
        "print(','.join(loaded))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_every_command_names_a_function_that_exists() -> None:
    import importlib

    parser = build_parser()
    targets: list[str] = []

    def walk(p: object) -> None:
        for action in getattr(p, "_actions", []):
            choices = getattr(action, "choices", None)
            if not isinstance(choices, dict):
                continue
            for sub in choices.values():
                if hasattr(sub, "_defaults") and sub._defaults.get("target"):
                    targets.append(sub._defaults["target"])
                walk(sub)

    walk(parser)
    assert len(targets) >= 20
    for target in targets:
        module, _, name = target.partition(":")
        assert callable(getattr(importlib.import_module(module), name)), target


def test_unknown_transport_is_refused_with_the_flag_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--transports", "tcp,carrier-pigeon"]) == 2
    err = capsys.readouterr().err
    assert "--transports" in err and "carrier-pigeon" in err and "tcp" in err


def test_missing_binary_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--binary", str(tmp_path / "nope")]) == 2
    assert "nope" in capsys.readouterr().err


def test_bad_numbers_name_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "prototypes", "--players", "50,zero"])
    assert "--players" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"transport": "carrier-pigeon"}, "cell transport 'carrier-pigeon' is not offered by"),
        ({"extra_client_flags": ["-no-such-flag", "1"]}, "extra_client_flags: '-no-such-flag'"),
        ({"params": {"blocks": 3}}, "key params.blocks: not a parameter of workload idle"),
        (
            {"workload": "stream", "params": {"channel": "tcp"}},
            'key params.channel: expected one of reliable, unreliable, found "tcp"',
        ),
    ],
)
def test_run_cell_refuses_what_the_manifest_lacks_as_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, object], named: str
) -> None:
    cell = {
        "prototype": "prototypes/reference/prototype.yaml",
        "transport": "tcp",
        "players": 2,
        "workload": "idle",
        "duration_s": 1,
        **change,
    }
    path = tmp_path / "cell.json"
    path.write_text(json.dumps(cell))
    out = tmp_path / "run"
    assert main(["run-cell", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert named in err and str(path) in err and "Traceback" not in err
    # Nothing ran, so nothing was written: no run directory and no failed attempt.
    assert not out.exists() and not out.with_name("run.failed").exists()
