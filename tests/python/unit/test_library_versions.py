"""Library versions as an experiment axis: the manifest declares them with exact module files, a
campaign names them per transport (one cell each), undeclared ones are refused when planning,
and comparisons keep versions apart. (Building and running them with Go, and go.mod staying
tidy: e2e/toolchain/test_library_version_builds.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from prototypes.contract import manifest as manifests
from workflow.campaign import expand as campaigns

from support.paths import REFERENCE_MANIFEST as MANIFEST
from support.paths import REPO

REF = REPO / "prototypes" / "reference"
KCP = "github.com/xtaci/kcp-go/v5"
QUIC = "github.com/quic-go/quic-go"


def _campaign(tmp_path: Path, versions: object, transports: list[str] | None = None) -> Path:
    doc = {
        "name": "v",
        "description": "versions",
        "seed": 3,
        "repetitions": 2,
        "defaults": {"duration_s": 2},
        "matrix": [
            {
                "name": "b",
                "prototypes": [
                    {
                        "name": "reference",
                        "transports": transports or ["kcp", "quic", "tcp"],
                        "versions": versions,
                    }
                ],
                "players": [4],
                "workloads": [{"name": "idle"}],
            }
        ],
    }
    path = tmp_path / "v.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_manifest_declares_versions_per_library() -> None:
    man = manifests.load(MANIFEST)
    assert man.library_builds is not None
    # At least three versions (the pinned one and two more) of kcp-go and quic-go, two of the
    # WebRTC and WebSocket libraries.
    for transport, least in (("kcp", 3), ("quic", 3), ("webrtc", 2), ("ws", 2)):
        assert len(man.declared_versions(transport)) - 1 >= least, transport
    vb = man.version_build("kcp", "v5.7.5")
    assert vb is not None and vb.library == KCP
    assert vb.executable == REF / "bin" / "versions" / f"{KCP}@v5.7.5" / "netstick-ref"
    assert f"-modfile=versions/{KCP}@v5.7.5.mod" in vb.command
    assert vb.missing_inputs == ()
    # The pinned version, by name or by number, is the manifest's own executable.
    assert man.version_build("kcp", "pinned") is None
    assert man.for_version("kcp", man.transport("kcp").version).executable == man.executable


def test_every_declared_version_has_exact_module_files() -> None:
    """Each .mod requires exactly the declared version of its library and has its .sum."""
    man = manifests.load(MANIFEST)
    assert man.library_builds is not None
    for library, versions in man.library_builds.libraries.items():
        for version in versions:
            mod = REF / "versions" / f"{library}@{version}.mod"
            assert mod.with_suffix(".sum").is_file(), mod
            text = mod.read_text()
            assert f"\t{library} {version}\n" in text, (mod, "does not require", version)
            assert f"{library} {version} h1:" in mod.with_suffix(".sum").read_text()


def test_undeclared_library_in_manifest_is_refused(tmp_path: Path) -> None:
    doc = yaml.safe_load(MANIFEST.read_text())
    doc["library_builds"]["libraries"]["example.com/nothing"] = ["v1.0.0"]
    doc["library_builds"]["executable"] = "bin/{version}/x"
    with pytest.raises(manifests.ManifestError) as err:
        manifests.parse(doc, tmp_path / "prototype.yaml")
    text = str(err.value)
    assert "key library_builds.libraries.example.com/nothing: no transport uses this" in text
    assert "key library_builds.executable: must contain {library} and {version}" in text


def test_versions_become_cells(tmp_path: Path) -> None:
    path = _campaign(tmp_path, {"kcp": ["pinned", "v5.7.5"], "quic": ["v0.60.0", "v0.57.0"]})
    plan = campaigns.plan(path)
    got = sorted(
        {(r.cell["transport"], r.cell["library_version"], r.cell["cell_id"]) for r in plan.runs}
    )
    assert [(t, v) for t, v, _ in got] == [
        ("kcp", "pinned"),
        ("kcp", "v5.7.5"),
        ("quic", "v0.57.0"),
        ("quic", "v0.60.0"),
        ("tcp", "pinned"),  # not named: pinned
    ]
    ids = [cid for _, _, cid in got]
    assert len(set(ids)) == 5
    assert ids[1].startswith("reference-v5.7.5-kcp-p4-idle-")
    assert ids[0].startswith("reference-kcp-p4-idle-")
    assert len(plan.runs) == 10  # two repetitions each
    builds = campaigns.version_builds_of(plan)
    assert sorted((b.library, b.version) for b in builds) == [
        (QUIC, "v0.57.0"),
        (QUIC, "v0.60.0"),
        (KCP, "v5.7.5"),
    ]


def test_version_list_applies_to_every_transport(tmp_path: Path) -> None:
    plan = campaigns.plan(_campaign(tmp_path, ["pinned"]))
    assert {r.cell["library_version"] for r in plan.runs} == {"pinned"}


@pytest.mark.parametrize(
    ("versions", "transports", "expected"),
    [
        (
            {"kcp": ["v9.9.9"]},
            None,
            f"key prototypes.0.versions.kcp.0: prototypes/reference/prototype.yaml: library "
            f"{KCP} (transport kcp) has no version 'v9.9.9'; declared: pinned, v5.6.72, v5.7.5",
        ),
        (
            ["v5.7.5"],
            ["kcp", "tcp"],
            "key prototypes.0.versions.0: prototypes/reference/prototype.yaml: library Go net "
            "(standard library) (transport tcp) has no version 'v5.7.5'; declared: pinned, go",
        ),
        (
            {"udp": ["pinned"]},
            ["kcp"],
            "key prototypes.0.versions.udp: 'udp' is not among this entry's transports; "
            "expected one of kcp",
        ),
    ],
)
def test_undeclared_versions_are_refused_when_planning(
    tmp_path: Path, versions: object, transports: list[str] | None, expected: str
) -> None:
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(_campaign(tmp_path, versions, transports))
    assert expected in str(err.value)
    assert "v.yaml" in str(err.value)


def test_missing_module_files_are_refused_when_planning(tmp_path: Path) -> None:
    proto = tmp_path / "proto"
    shutil.copytree(REF, proto, ignore=shutil.ignore_patterns("bin", "versions"))
    doc = _campaign(tmp_path, {"kcp": ["v5.7.5"]}, ["kcp"])
    camp = yaml.safe_load(doc.read_text())
    camp["matrix"][0]["prototypes"][0]["manifest"] = "proto/prototype.yaml"
    doc.write_text(yaml.safe_dump(camp, sort_keys=False))
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(doc)
    assert f"library {KCP} version v5.7.5: missing versions/{KCP}@v5.7.5.mod" in str(err.value)


def test_comparisons_keep_versions_of_one_transport_apart() -> None:
    """Two versions of kcp are two cells: compared with each other, never pooled against quic."""
    import polars as pl

    from stats import analyse

    rows = []
    for transport, version, rtt_us in (
        ("kcp", "pinned", 1000.0),
        ("kcp", "v5.7.5", 2000.0),
        ("quic", "pinned", 1000.0),
    ):
        for i in range(8):
            rows.append(
                {
                    "status": "ok", "prototype": "reference", "players": 4, "workload": "idle",
                    "params": "{}", "network_profile": "lan", "duration_s": 2.0,
                    "transport": transport, "library_version": version,
                    "cell_id": f"{transport}-{version}", "rtt_net_p50_us": rtt_us + i,
                    "rtt_net_p99_us": rtt_us + i, "server_cpu_cores": 0.1,
                }
            )  # fmt: skip
    comps = analyse.comparisons(pl.DataFrame(rows))
    p50 = comps.filter(pl.col("metric") == "rtt_net_p50_us")
    pairs = {(r["a"], r["b"]): r for r in p50.iter_rows(named=True)}
    # kcp@v5.7.5 against quic (another transport at another version) is not a comparison.
    assert set(pairs) == {("kcp", "kcp@v5.7.5"), ("kcp", "quic")}
    assert pairs[("kcp", "kcp@v5.7.5")]["ratio_b_over_a"] == pytest.approx(2003.5 / 1003.5)
    # pinned kcp alone against quic: equal medians, not pooled with the slower version
    assert pairs[("kcp", "quic")]["ratio_b_over_a"] == pytest.approx(1.0)
    assert pairs[("kcp", "quic")]["n_a"] == 8


def test_plan_description_lists_the_versions(tmp_path: Path) -> None:
    from workflow.campaign import progress

    plan = campaigns.plan(_campaign(tmp_path, {"kcp": ["pinned", "v5.7.5"], "quic": ["v0.60.0"]}))
    text = progress.describe_plan(plan)
    assert f"  reference kcp: {KCP} pinned, v5.7.5" in text
    assert f"  reference quic: {QUIC} v0.60.0" in text
    assert "reference tcp:" not in text  # pinned only
