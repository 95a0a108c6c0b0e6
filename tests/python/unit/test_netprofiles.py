"""Network profiles: built-ins, validation errors, and the emulator/netem renderings.

The netem rendering is only checked as text: this machine's kernel has no netem.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from workflow.harness import netprofiles as profiles
from workflow.harness.netprofiles import ProfileError

from support.profiles import EVERY_KEY

BUILTIN_NAMES = {"lan", "lan-emulated", "normal", "turbulent", "wan", "lossy"}


def test_every_builtin_validates_and_is_complete() -> None:
    ps = profiles.load_profiles()
    assert set(ps) == BUILTIN_NAMES
    for name, p in ps.items():
        assert p["description"], name
        for direction in ("up", "down"):
            d = p[direction]
            # normalized: every default filled in
            for key in ("delay_ms", "jitter_ms", "jitter_dist", "reorder", "loss", "rate_bps"):
                assert key in d, (name, direction, key)
        # a normalized profile validates again, unchanged
        assert profiles.validate_profile(name, p) == p


def test_builtin_values_follow_their_sources() -> None:
    ps = profiles.load_profiles()
    assert not profiles.needs_emulator(ps["lan"])
    assert profiles.needs_emulator(ps["lan-emulated"])
    assert profiles.emulator_args(ps["lan-emulated"], "A", "B") == ["-a", "A", "-b", "B"]
    for name in ("normal", "turbulent", "wan", "lossy"):
        assert profiles.needs_emulator(ps[name]), name
    # blog: RTT 27.484 +- 9.739 ms from two independent, equal one-way delays
    for name in ("normal", "turbulent"):
        up, down = ps[name]["up"], ps[name]["down"]
        assert up["delay_ms"] + down["delay_ms"] == pytest.approx(27.484)
        assert math.hypot(up["jitter_ms"], down["jitter_ms"]) == pytest.approx(9.739, abs=1e-3)
        assert up["rate_bps"] == down["rate_bps"] == 1_050_000
        assert up["jitter_dist"] == "normal"
    assert ps["normal"]["up"]["loss"] == ps["normal"]["down"]["loss"] == 0
    # turbulent: 10 % loss, 25 % correlation, on the players' outbound side only
    assert ps["turbulent"]["up"]["loss"] == 0.10
    assert ps["turbulent"]["up"]["loss_correlation"] == 0.25
    assert ps["turbulent"]["down"]["loss"] == 0
    wan = ps["wan"]
    for direction in ("up", "down"):
        assert wan[direction]["delay_ms"] == 50
        assert wan[direction]["jitter_ms"] == 5
        assert wan[direction]["loss"] == 0.01
        assert ps["lossy"][direction]["loss"] == 0.05
        assert ps["lossy"][direction]["delay_ms"] == 0


def _walk_schema(node: Any, path: str) -> list[str]:
    missing = []
    if isinstance(node, dict):
        for key, sub in node.get("properties", {}).items():
            if "description" not in sub:
                missing.append(f"{path}.{key}")
            missing += _walk_schema(sub, f"{path}.{key}")
        for key, sub in node.get("$defs", {}).items():
            missing += _walk_schema(sub, f"{path}.$defs.{key}")
    return missing


def test_schema_describes_every_key() -> None:
    schema = json.loads(profiles.SCHEMA_PATH.read_text())
    assert _walk_schema(schema, "profile") == []


def _error(profile: Any, name: str = "bad-one") -> str:
    with pytest.raises(ProfileError) as info:
        profiles.validate_profile(name, profile, "test.yaml")
    return str(info.value)


def test_unknown_key_names_profile_key_and_allowed_keys() -> None:
    msg = _error({"description": "x", "up": {"delay": 5}})
    assert "network profile 'bad-one' (test.yaml)" in msg
    assert "key up.delay: unknown key; expected one of delay_ms, gilbert_elliott," in msg
    assert "jitter_dist" in msg


def test_bad_values_name_key_and_allowed_values() -> None:
    msg = _error(
        {"description": "x", "down": {"jitter_dist": "pareto", "loss": 1.5, "rate_bps": 2.5}}
    )
    assert 'key down.jitter_dist: expected one of normal, uniform, found "pareto"' in msg
    assert "key down.loss: expected a number >= 0 and <= 1, found 1.5 (a number)" in msg
    assert "key down.rate_bps: expected an integer >= 0 and <= " in msg
    msg = _error({"up": {}})
    assert "key description: missing; expected" in msg
    msg = _error({"description": "x", "force_emulator": "yes"})
    assert 'key force_emulator: expected true or false, found "yes" (a string)' in msg


def test_semantic_rules() -> None:
    ge = {"p": 0.01, "r": 0.25, "h": 1, "k": 0}
    msg = _error({"description": "x", "up": {"loss": 0.1, "gilbert_elliott": ge}})
    assert "key up.loss" in msg and "exclusive" in msg
    msg = _error({"description": "x", "up": {"queue_ms": 20}})
    assert "key up.queue_ms" in msg and "rate_bps" in msg
    msg = _error({"description": "x", "down": {"loss_correlation": 0.5}})
    assert "key down.loss_correlation" in msg and "loss > 0" in msg
    msg = _error(
        {"description": "x", "up": {"gilbert_elliott": {"p": 0, "r": 0.2, "h": 1, "k": 0}}}
    )
    assert "key up.gilbert_elliott.p: expected a number > 0 and <= 1, found 0" in msg


def test_profile_names_are_checked() -> None:
    assert "bad profile name" in _error({"description": "x"}, name="Has Space")


def test_custom_profiles_from_mapping_and_file(tmp_path: Path) -> None:
    custom = {"slow": {"description": "slow link", "up": {"rate_bps": 64000}}}
    ps = profiles.load_profiles(custom)
    assert set(ps) == BUILTIN_NAMES | {"slow"}
    assert ps["slow"]["up"]["queue_ms"] == profiles.DEFAULT_QUEUE_MS  # rendered explicitly
    f = tmp_path / "mine.yaml"
    f.write_text("far:\n  description: far away\n  up: {delay_ms: 100}\n  down: {delay_ms: 100}\n")
    assert profiles.get_profile("far", f)["down"]["delay_ms"] == 100
    with pytest.raises(ProfileError, match="redefine built-in"):
        profiles.load_profiles({"lan": {"description": "not the real lan"}})
    f.write_text("far: [unclosed\n")
    with pytest.raises(ProfileError, match=r"mine\.yaml: not valid YAML"):
        profiles.load_profiles(f)
    with pytest.raises(ProfileError, match="'nope' is not defined; allowed: lan"):
        profiles.get_profile("nope")


def test_resolve_name_or_inline_profile() -> None:
    name, p = profiles.resolve("wan")
    assert name == "wan" and p["up"]["delay_ms"] == 50
    inline = {"description": "inline", "up": {"delay_ms": 3}}
    name, p = profiles.resolve(inline)
    assert name.startswith("custom") and len(name) == len("custom") + 8
    assert p["up"]["delay_ms"] == 3 and p["down"]["delay_ms"] == 0
    with pytest.raises(ProfileError, match=r"key up\.delay_ms"):
        profiles.resolve({"description": "x", "up": {"delay_ms": -1}})


def test_emulator_args_render_as_documented() -> None:
    p = profiles.validate_profile("full", EVERY_KEY)
    assert profiles.emulator_args(p, "ea", "eb") == [
        "-a", "ea", "-b", "eb",
        "-ab-delay", "25ms", "-ab-jitter", "5ms", "-ab-dist", "uniform", "-ab-reorder",
        "-ab-loss", "0.05", "-ab-loss-corr", "0.25", "-ab-rate-bps", "1000000",
        "-ab-queue-ms", "80",
        "-ba-delay", "12.5ms", "-ba-jitter", "2ms", "-ba-dist", "normal",
        "-ba-ge-p", "0.01", "-ba-ge-r", "0.25", "-ba-ge-h", "1", "-ba-ge-k", "0",
    ]  # fmt: skip
    # without interfaces: only the impairment flags
    assert profiles.emulator_args(profiles.get_profile("lossy")) == [
        "-ab-loss", "0.05", "-ba-loss", "0.05",
    ]  # fmt: skip


def test_netem_commands_render() -> None:
    p = profiles.validate_profile("full", EVERY_KEY)
    up, down = profiles.netem_commands(p, "c0", "s0")
    assert up == [
        "tc", "qdisc", "replace", "dev", "c0", "root", "netem",
        "delay", "25ms", "5ms", "loss", "random", "5%", "25%", "rate", "1000000bit",
    ]  # fmt: skip
    assert down == [
        "tc", "qdisc", "replace", "dev", "s0", "root", "netem",
        "delay", "12.5ms", "2ms", "distribution", "normal",
        "loss", "gemodel", "1%", "25%", "100%", "0%",
    ]  # fmt: skip
    assert profiles.netem_commands(profiles.get_profile("lan"), "c0", "s0") == []
    turbulent = profiles.netem_commands(profiles.get_profile("turbulent"), "c0", "s0")
    assert turbulent[0][12:16] == ["loss", "random", "10%", "25%"]
    assert "loss" not in turbulent[1]
