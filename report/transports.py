"""The transports a prototype's runs measured, in words for the report's "Prototypes that ran"
(facts.json's runs.prototypes[].transports, gathered by workflow.campaign.facts.transports):
one row per transport as measured, naming its variant and what that changes, the options the
campaign set, and every setting the processes recorded with the library's own default beside
it, so a reader sees what was measured against what the library's users get."""

from __future__ import annotations

import json
from typing import Any


def _options(options: dict[str, str]) -> str:
    return ", ".join(f"t.{k}={v}" for k, v in sorted(options.items()))


def _setting(s: dict[str, Any]) -> str:
    values = " / ".join(s["values"]) if s["values"] else "not recorded"
    default = s["library_default"]
    beside = f" (library default {default})" if default is not None else " (not declared)"
    return f"{s['name']} {values}{beside}"


def row(t: dict[str, Any]) -> tuple[str, str]:
    """One transport as measured: (item, value)."""
    runs = f"{t['runs']} run{'s' if t['runs'] != 1 else ''}"
    if t["variant"]:
        what = t["variant_description"] or "not described by the manifest now"
        parts = [f"{runs}; variant {t['variant']}: {what} ({_options(t['variant_options'])})"]
    else:
        parts = [f"{runs}; stock (no variant: the library as its users get it)"]
    options = [json.loads(o) for o in t["campaign_options"] if o != "{}"]
    if options:
        parts.append("campaign options " + "; ".join(_options(o) for o in options))
    if t["settings"]:
        parts.append("settings " + ", ".join(_setting(s) for s in t["settings"]))
    else:
        parts.append("settings: all the library's defaults")
    if t["runs_without_settings"]:
        parts.append(f"{t['runs_without_settings']} runs recorded no transport_settings")
    return f"transport {t['transport']}", "; ".join(parts)


def rows(prototype: dict[str, Any]) -> list[tuple[str, str]]:
    """Every transport of a prototype's runs section (none for facts written before runs
    recorded their transports)."""
    return [row(t) for t in prototype.get("transports") or []]
