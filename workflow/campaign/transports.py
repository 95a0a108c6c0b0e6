"""The transports of a campaign's prototypes entry: each a transport of the prototype's
manifest as its library's users get it, or <transport>+<variant> for a named tuning the manifest
declares (transports.variants), with the campaign's transport options and label; checked
against the manifest with errors that name the campaign's key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prototypes.contract import manifest as manifests
from workflow.campaign.errors import CampaignError


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of a prototypes entry's transports: the transport, its variant (the name after
    `+`: enet+merged-acks), the campaign's options and label."""

    name: str
    variant: str | None
    options: dict[str, str]
    label: str | None


def entries(proto: Mapping[str, Any]) -> list[Entry]:
    out = []
    for t in proto["transports"]:
        doc = {"name": t} if isinstance(t, str) else t
        name, _, variant = str(doc["name"]).partition("+")
        out.append(Entry(name, variant or None, dict(doc.get("options", {})), doc.get("label")))
    return out


def check(
    man: manifests.Manifest, where: str, key: str, proto_name: str, entry: Entry
) -> dict[str, str]:
    """The transport, its variant and its options must be the manifest's; the variant's
    options ({} without one). key: prototypes.<i>.transports.<j>."""
    tname = entry.name
    if tname not in man.transport_names:
        raise CampaignError(
            f"{where}: key {key}: {tname!r} is not a transport of {proto_name}; expected one "
            f"of {', '.join(man.transport_names)}"
        )
    transport = man.transport(tname)
    variant = transport.variants.get(entry.variant) if entry.variant else None
    if entry.variant and variant is None:
        named = ", ".join(f"{tname}+{v}" for v in transport.variants) or "none"
        raise CampaignError(
            f"{where}: key {key}: {tname}+{entry.variant} names no variant of {tname}; "
            f"{proto_name} declares {named} (prototype.yaml transports.variants)"
        )
    offered = transport.options
    for opt in entry.options:
        if variant is not None and opt in variant.options:
            raise CampaignError(
                f"{where}: key {key}.options.{opt}: set by the variant {tname}+{variant.name} "
                f"({opt}={variant.options[opt]}); a different value would be another variant"
            )
        if opt not in offered:
            tuning = [f"{tname}+{v.name}" for v in transport.variants.values() if opt in v.options]
            hint = f" (a tuning: name the variant {' or '.join(tuning)})" if tuning else ""
            raise CampaignError(
                f"{where}: key {key}.options.{opt}: "
                f"not an option of {tname}{hint}; expected one of "
                f"{', '.join(sorted(offered)) or '(none)'}"
            )
    return dict(variant.options) if variant is not None else {}
