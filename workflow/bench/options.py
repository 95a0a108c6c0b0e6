"""The option types and defaults of the benches' parsers, shared with the CLI's own commands
(`netstick demo` takes the same transports, players, window and binary).

Each type refuses a bad value with the flag named (argparse's ArgumentTypeError), so a bad
number stops the command before anything runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from workflow.files import REPO

DATA = REPO / "data"
BENCH_DIR = DATA / "bench"  # data/bench/NAME.json: the committed records
DEFAULT_BINARY = Path("prototypes/reference/bin/netstick-ref")


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return int(text)


def seconds(minimum: float, strict: bool) -> Callable[[str], float]:
    """A number of seconds > minimum (strict) or >= minimum."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (value > minimum if strict else value >= minimum):
            relation = ">" if strict else ">="
            raise argparse.ArgumentTypeError(
                f"expected a number of seconds {relation} {minimum:g}, got {text!r}"
            )
        return value

    return parse


def names(text: str) -> list[str]:
    found = [t.strip() for t in text.split(",") if t.strip()]
    if not found:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
    return found


def counts(text: str) -> list[int]:
    try:
        found = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        found = []
    if not found or any(c < 1 for c in found):
        raise argparse.ArgumentTypeError(f"expected counts >= 1 like 50,200; got {text!r}")
    return found


def binary_arg(p: argparse.ArgumentParser) -> None:
    """--binary: the prototype executable; the CLI fills in DEFAULT_BINARY and checks it exists
    before the command runs."""
    p.add_argument(
        "--binary", type=Path, default=None, help=f"prototype binary (default {DEFAULT_BINARY})"
    )
