"""`netstick bench show data/bench/NAME.json`: a bench's record as the README quotes it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workflow.bench.client_profile import profiles_markdown
from workflow.bench.record import records_markdown
from workflow.bench.targets import targets_markdown
from workflow.files import read_json


def markdown(doc: Mapping[str, Any]) -> str:
    """The records table where there is one (medians of the repetitions), then the targets, then
    where each client's CPU goes where the bench profiled them."""
    parts = [records_markdown(doc["records"])] if doc.get("records") else []
    parts.append(targets_markdown(doc.get("targets", [])))
    if doc.get("client_profiles"):
        parts.append(profiles_markdown(doc["client_profiles"]))
    return "\n\n".join(parts)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, help="data/bench/NAME.json")


def main(args: argparse.Namespace) -> int:
    doc = read_json(args.file)
    if doc is None:
        print(f"netstick bench show: {args.file}: missing or not a JSON object", file=sys.stderr)
        return 2
    print(markdown(doc))
    return 0
