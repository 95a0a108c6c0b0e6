"""How each metric is shown: its label with the shown unit and the divisor from its stored unit
(from the stats stage's metrics.json, through report/sentences.py's unit table)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from report import sentences
from workflow.files import read_json


@dataclass(frozen=True)
class Display:
    """How each metric is shown (from the stats stage's metrics.json): its label with the shown
    unit, its divisor from the stored unit, and its plain label and shown unit."""

    labels: dict[str, str]
    divisors: dict[str, float]
    names: dict[str, str]
    units: dict[str, str]
    thresholds_us: tuple[float, ...]

    @classmethod
    def read(cls, path: Path) -> Display:
        doc = read_json(path)
        if doc is None:
            raise ValueError(f"{path}: missing or not a JSON object; run the stats stage first")
        labels, divisors, names, units = {}, {}, {}, {}
        # Series labels first: a metric of both lists is labelled as a cell metric.
        for m in [*doc.get("series", []), *doc.get("metrics", [])]:
            shown, divisor = sentences.SHOWN[m["unit"]]
            labels[m["name"]] = f"{m['label']} ({shown})"
            divisors[m["name"]] = divisor
            names[m["name"]] = m["label"]
            units[m["name"]] = shown
        return cls(labels, divisors, names, units, tuple(doc.get("thresholds_us", ())))
