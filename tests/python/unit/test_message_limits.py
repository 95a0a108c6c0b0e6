"""Message limits per library and channel (manifest `message_limits`, CONTRACT.md section 5): a
version's own truths (`versions`), a stream or pingpong cell refused when planned where its probe
does not fit its channel (at the limit it passes, one byte more is refused naming the limit), and
the limits a process recorded held against the manifest's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prototypes.contract import manifest as mf
from prototypes.contract.argv import check_cell
from prototypes.contract.checklogs import check_log_dir

from support.paths import REFERENCE_MANIFEST, REPO

FISHNET = REPO / "prototypes" / "unity" / "fishnet" / "prototype.yaml"


def _cell(transport: str, workload: str, **params: Any) -> dict[str, Any]:
    return {"transport": transport, "workload": workload, "params": params}


def test_the_reference_declares_what_its_transports_carry() -> None:
    man = mf.load(REFERENCE_MANIFEST)
    quic = man.transport("quic").message_limits
    assert (quic.reliable_bytes, quic.unreliable_bytes, quic.declared) == (16 << 20, 1163, True)
    # tcp carries more than the contract's 1 MiB and declares nothing.
    tcp = man.transport("tcp").message_limits
    assert (tcp.reliable_bytes, tcp.declared) == (mf.CONTRACT_MAX_MESSAGE_BYTES, False)


@pytest.mark.parametrize(
    ("transport", "channel", "limit"),
    [("quic", "unreliable", 1163), ("udp", "reliable", 65506), ("kcp", "reliable", 299875)],
)
def test_a_probe_at_its_channels_limit_is_planned_and_one_byte_more_is_refused(
    transport: str, channel: str, limit: int
) -> None:
    man = mf.load(REFERENCE_MANIFEST)
    check_cell(man, _cell(transport, "pingpong", size=limit, channel=channel))
    with pytest.raises(ValueError) as refused:
        check_cell(man, _cell(transport, "stream", size=limit + 1, channel=channel))
    text = str(refused.value)
    assert text.startswith(f"params.size {limit + 1}: transport {transport} (") and (
        f"carries at most {limit} bytes on its {channel} channel" in text
    ), text


def test_with_transport_options_the_prototype_judges_the_probe() -> None:
    """Options may change what the library carries (kcp's t.mtu): planning leaves the probe to
    the prototype, which refuses it when it starts if it still does not fit."""
    cell = {**_cell("kcp", "stream", size=299876), "transport_options": {"mtu": "1400"}}
    check_cell(mf.load(REFERENCE_MANIFEST), cell)


def test_another_version_brings_its_own_truths() -> None:
    """FishNet 4.2.2 (the thesis track): its clients notice a dead server after 1800 s, and its
    unreliable packets are smaller; 4.7.2 keeps the manifest's own."""
    man = mf.load(FISHNET)
    current = man.transport("tugboat")
    thesis = man.for_version("tugboat", "4.2.2").transport("tugboat")
    assert (current.server_lost_s, current.message_limits.unreliable_bytes) == (12, 1253)
    assert (thesis.version, thesis.server_lost_s) == ("4.2.2", 1802)
    assert thesis.message_limits.unreliable_bytes == 994
    assert "t.timeout_s is refused" in (current.versions["4.2.2"].notes or "")
    check_cell(man, {**_cell("tugboat", "stream", size=1253, channel="unreliable")})
    with pytest.raises(ValueError, match="carries at most 994 bytes on its unreliable channel"):
        check_cell(
            man,
            {**_cell("tugboat", "stream", size=995, channel="unreliable"),
             "library_version": "4.2.2"},
        )  # fmt: skip


def _logs(tmp_path: Path, recorded: dict[str, int] | None, transport: str = "quic") -> Path:
    d = tmp_path / "logs"
    d.mkdir(parents=True)
    meta: dict[str, Any] = {"transport": transport, "transport_options": {}}
    if recorded is not None:
        meta["message_limits"] = recorded
    (d / "server.meta.json").write_text(json.dumps(meta))
    return d


def _limit_violations(d: Path) -> list[str]:
    return [
        str(v)
        for v in check_log_dir(d, manifest=mf.load(REFERENCE_MANIFEST))
        if "message_limits" in v.message
    ]


def test_recorded_limits_are_held_against_the_manifest(tmp_path: Path) -> None:
    assert (
        _limit_violations(
            _logs(tmp_path / "a", {"reliable_bytes": 16 << 20, "unreliable_bytes": 1163})
        )
        == []
    )
    wrong = _limit_violations(
        _logs(tmp_path / "b", {"reliable_bytes": 16 << 20, "unreliable_bytes": 1200})
    )
    assert wrong == [
        f"server.meta.json: message_limits says unreliable_bytes 1200 but the manifest "
        f"{REFERENCE_MANIFEST} (transports quic message_limits) says 1163"
    ]
    # Undeclared: the transport must carry at least the contract's 1 MiB.
    small = _limit_violations(
        _logs(tmp_path / "c", {"reliable_bytes": 1000, "unreliable_bytes": 1 << 20}, "tcp")
    )
    assert len(small) == 1 and "less than the contract's 1048576; declare it" in small[0]
    bad = _limit_violations(_logs(tmp_path / "d", {"reliable_bytes": "lots"}))
    assert len(bad) == 1 and "expected an object of reliable_bytes and unreliable_bytes" in bad[0]
    # A process that records none (an older prototype) is not judged on it.
    assert _limit_violations(_logs(tmp_path / "e", None)) == []
