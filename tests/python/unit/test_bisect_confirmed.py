"""After the night's decision, the versions confirmed slower are bisected into the history
(workflow/nightly/bisect_confirmed.py); the bisection itself: test_bisect_logic.py and
e2e/toolchain/test_bisect.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workflow.nightly import bisect as bisection
from workflow.nightly.bisect_confirmed import (
    bisect_confirmed,
    confirmed_slower,
    repository_url,
)

KCP = "github.com/xtaci/kcp-go/v5"


def version(
    v: str, verdict: str, confirmed: bool | None, metric: str = "rtt_net_p50_us"
) -> dict[str, Any]:
    return {"prototype": "no-such-prototype", "library": KCP, "transport": "kcp", "version": v,
            "predecessor": "v5.7.4", "predecessor_cell": "ref-kcp-v5.7.4", "cell": f"ref-kcp-{v}",
            "metric": metric, "verdict": verdict, "confirmed": confirmed}  # fmt: skip


def decision(*versions: dict[str, Any]) -> dict[str, Any]:
    return {"campaign": "nightly", "night": "20261126T020000Z-abc.csv", "night_id": "abc",
            "versions": list(versions)}  # fmt: skip


def test_only_versions_confirmed_slower_are_bisected_once_each() -> None:
    doc = decision(
        version("v5.7.5", "slower", True),
        version("v5.7.5", "slower", True, "server_cpu_cores"),  # the same version, once
        version("v5.7.6", "slower", False),  # the re-run did not find it again
        version("v5.7.7", "faster", False),
    )
    assert [(v["version"], v["metric"]) for v in confirmed_slower(doc)] == [
        ("v5.7.5", "rtt_net_p50_us")
    ]


def test_repository_of_a_module_path() -> None:
    assert repository_url(KCP) == "https://github.com/xtaci/kcp-go.git"
    assert repository_url("github.com/coder/websocket") == "https://github.com/coder/websocket.git"
    assert repository_url("golang.org/x/sys") is None  # no guess


def test_a_bisection_that_cannot_run_is_filed_inconclusive_with_why(tmp_path: Path) -> None:
    doc = decision(version("v5.7.5", "slower", True))
    hist = tmp_path / "history"
    [path] = bisect_confirmed(doc, hist, tmp_path / "work", bisection.Settings())
    assert path == hist / "nightly" / "bisections" / "20261126T020000Z-abc-1.json"
    saved = json.loads(path.read_text())
    assert saved["status"] == bisection.INCONCLUSIVE and saved["first_bad"] is None
    assert "no-such-prototype" in saved["bound"]
    assert (saved["good"], saved["bad"], saved["library"]) == ("v5.7.4", "v5.7.5", KCP)
    before = path.read_bytes()
    # A second attempt of the night keeps what the first one filed.
    assert bisect_confirmed(doc, hist, tmp_path / "work", bisection.Settings()) == [path]
    assert path.read_bytes() == before
