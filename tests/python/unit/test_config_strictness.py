"""Configuration that means something else than it says is refused, naming file, key and lines:
a key given twice in one YAML mapping (PyYAML keeps the last silently), and overrides of 0 or
less (they used to be ignored and the file's value ran)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prototypes.contract import manifest
from prototypes.contract.yamlfile import DuplicateKeyError, load_yaml
from workflow.campaign import expand
from workflow.files import REPO


def test_a_key_given_twice_is_an_error_with_both_lines() -> None:
    with pytest.raises(
        DuplicateKeyError, match=r"line 4: key 'duration_s' given twice \(first on line 2\)"
    ):
        load_yaml("name: x\nduration_s: 8\nseed: 1\nduration_s: 3600\n")
    # Merge keys (<<) are not duplicates, and a key may repeat in different mappings.
    assert load_yaml("a: &d {x: 1}\nb:\n  <<: *d\n  y: 2\nc: {x: 3}\n") == {
        "a": {"x": 1}, "b": {"x": 1, "y": 2}, "c": {"x": 3},
    }  # fmt: skip


def test_a_campaign_with_a_duplicate_key_is_refused(tmp_path: Path) -> None:
    text = (REPO / "workflow" / "campaigns" / "quick.yaml").read_text()
    bad = tmp_path / "quick.yaml"
    bad.write_text(text.replace("  duration_s: 12\n", "  duration_s: 12\n  duration_s: 3600\n"))
    with pytest.raises(expand.CampaignError) as err:
        expand.plan(bad)
    said = str(err.value)
    assert "quick.yaml" in said and "'duration_s' given twice" in said and "first on line" in said


def test_a_manifest_with_a_duplicate_key_is_refused(tmp_path: Path) -> None:
    src = REPO / "prototypes" / "reference"
    dest = tmp_path / "reference"
    dest.mkdir()
    text = (src / "prototype.yaml").read_text()
    (dest / "prototype.yaml").write_text(
        text.replace("name: reference\n", "name: reference\nname: other\n", 1)
    )
    with pytest.raises(manifest.ManifestError) as err:
        manifest.load(dest / "prototype.yaml")
    assert "key 'name' given twice" in str(err.value) and "prototype.yaml" in str(err.value)


@pytest.mark.parametrize(
    ("override", "value", "words"),
    [
        ("repetitions", 0, "expected an integer >= 1, got 0"),
        ("repetitions", -2, "expected an integer >= 1, got -2"),
        ("repetitions", 2.5, "expected an integer >= 1, got 2.5"),
        ("duration_s", 0, "expected seconds > 0 and <= 86400, got 0"),
        ("duration_s", -1.0, "expected seconds > 0 and <= 86400, got -1.0"),
        ("duration_s", 360000, "expected seconds > 0 and <= 86400, got 360000"),
    ],
)
def test_overrides_of_zero_or_less_are_refused(override: str, value: float, words: str) -> None:
    with pytest.raises(expand.CampaignError, match=f"override {override}") as err:
        expand.plan("quick", **{override: value})
    assert words in str(err.value)
    # A valid override still shortens the campaign.
    assert len(expand.plan("quick", repetitions=1, duration_s=2.0).runs) == 6


def test_a_campaign_without_a_budget_is_held_to_a_night(tmp_path: Path) -> None:
    text = (REPO / "workflow" / "campaigns" / "quick.yaml").read_text()
    text = text.replace("budget_min: 10\n", "")
    ok = tmp_path / "quick.yaml"
    ok.write_text(text)
    assert expand.plan(ok).budget_problem() is None  # 8.5 min
    long = tmp_path / "long.yaml"
    long.write_text(
        text.replace("name: quick", "name: long").replace("duration_s: 12", "duration_s: 3600")
    )
    said = expand.plan(long).budget_problem()
    assert said is not None
    assert "sets no budget_min" in said and "at most 480 min" in said and "over_budget=ok" in said
    assert "about 2" in said  # 36 runs of an hour: about 2,2xx min, stated
