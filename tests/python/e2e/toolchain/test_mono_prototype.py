"""The mono prototype (prototypes/mono): Netstick.Core hosted by mono over System.Net.Sockets.

It is built once for the module (bash build.sh, seconds), then: the conformance checker passes it on
both transports; its workloads' defaults and bounds agree with workloads.schema.json; it plays
against the Go reference in both directions (same wire format, same world for the same seed); and a
campaign compares it with the reference through Snakemake, report included.
"""

from __future__ import annotations

import json
import math
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from prototypes.contract import checklogs, conformance, lines
from prototypes.contract import manifest as mf
from prototypes.contract.argv import client_argvs, server_argv
from prototypes.contract.conformance import session
from workflow.bench import scratch

from support import report_checks as rc
from support.marks import needs_mono, needs_reference_binary, needs_snakemake
from support.paths import REFERENCE_MANIFEST, REPO

MONO_DIR = REPO / "prototypes" / "mono"
MONO_MANIFEST = MONO_DIR / "prototype.yaml"
WORKLOADS_SCHEMA = REPO / "prototypes" / "contract" / "workloads.schema.json"

pytestmark = needs_mono


@pytest.fixture(scope="module")
def mono() -> mf.Manifest:
    """The manifest, after building the executable from the current sources."""
    res = subprocess.run(
        ["bash", "build.sh"], cwd=MONO_DIR, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return mf.load(MONO_MANIFEST)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def read_meta(log_dir: Path, proc: str) -> dict[str, Any]:
    return json.loads((log_dir / f"{proc}.meta.json").read_text())


# -- conformance ---------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["tcp", "udp"])
def test_passes_every_conformance_check(mono: mf.Manifest, transport: str, tmp_path: Path) -> None:
    results = conformance.check_prototype(
        mono, transport, quick=transport == "udp", work_dir=tmp_path
    )
    failed = [f"{r.name}: {'; '.join(r.violations)}" for r in results if r.status == "fail"]
    assert failed == []
    assert {r.name for r in results if r.status == "pass"} >= {
        "ready-line", "port-in-use", "run-stream", "sigterm-client", "server-lost", "no-server",
        "library-versions",
    }  # fmt: skip
    meta = read_meta(next(tmp_path.rglob("server.meta.json")).parent, "server")
    assert meta["prototype"] == "mono" and meta["transport"] == transport
    assert set(meta["library_versions"]) == {"mono", "netstick-core"}
    assert meta["library_versions"] == mono.library_versions


def _external_layout(mono: mf.Manifest, where: Path) -> Path:
    """The mono prototype laid out as a Unity prototype is: built elsewhere (build.external, with
    the command that fetches the builds) into a server program and a separate client program."""
    doc: dict[str, Any] = yaml.safe_load(MONO_MANIFEST.read_text())
    doc.pop("build")
    doc["build"] = {
        "external": "the CI's build job (here: this test)",
        "fetch": ["bash", "fetch.sh"],
    }
    doc["executable"] = "server/netstick-mono-server.exe"
    doc["client_executable"] = "client/netstick-mono-client.exe"
    (where / "fetch.sh").write_text(
        "set -e\nmkdir -p server client\n"
        f"cp {mono.executable} server/netstick-mono-server.exe\n"
        f"cp {mono.executable} client/netstick-mono-client.exe\n"
    )
    path = where / "prototype.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_an_external_two_program_build_passes_every_check(
    mono: mf.Manifest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """check-prototype on a prototype whose programs are fetched, not built, and whose clients
    are another program than its server: first it names what to fetch and how, then, fetched,
    every check runs against both programs and passes."""
    path = _external_layout(mono, tmp_path)
    man = mf.load(path)
    with pytest.raises(conformance.ConformanceError) as missing:
        conformance.check_prototype(man, "tcp")
    text = str(missing.value)
    assert "netstick-mono-server.exe" in text and "netstick-mono-client.exe" in text
    assert "fetch them with `bash fetch.sh`" in text
    fetched = subprocess.run(["bash", "fetch.sh"], cwd=tmp_path, capture_output=True, text=True)
    assert fetched.returncode == 0, fetched.stderr
    started: list[tuple[str, list[str]]] = []
    spawn = session.spawn

    def spy(name: str, argv: list[str], *args: Any, **kwargs: Any) -> Any:
        started.append((name, list(argv)))
        return spawn(name, argv, *args, **kwargs)

    monkeypatch.setattr(session, "spawn", spy)
    results = conformance.check_prototype(man, "tcp", work_dir=tmp_path / "work")
    assert [f"{r.name}: {r.violations}" for r in results if r.status != "pass"] == []
    assert [r.name for r in results] == list(conformance.CHECKS)
    # Every server the checks started ran the server's program, every client the client's.
    programs = {(name.split("-")[0], Path(argv[1]).name) for name, argv in started}
    assert programs == {
        ("server", "netstick-mono-server.exe"),
        ("client", "netstick-mono-client.exe"),
    }, started


def test_every_udp_player_has_its_own_source_port(mono: mf.Manifest, tmp_path: Path) -> None:
    # mono sets SO_REUSEADDR on new sockets, and with it Linux hands some connected UDP sockets
    # the same ephemeral port (about 3 in 100 here): two players would be one peer to the server.
    cell = {"transport": "udp", "players": mono.players_per_process, "duration_s": 0.5}
    server = _start_server(mono, cell, tmp_path)
    try:
        (argv,) = client_argvs(mono, cell, host="127.0.0.1", port=cell["port"], log_dir=tmp_path)
        client = _run(argv, timeout_s=60)
        assert client.returncode == 0, client.stderr
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=5) == 0
    events = (tmp_path / "server.events.csv").read_text().splitlines()
    remotes = [r.split(",")[4] for r in events if ",join," in r]
    assert len(remotes) == len(set(remotes)) == mono.players_per_process
    assert checklogs.check_log_dir(tmp_path) == []


# -- workloads against the schema ---------------------------------------------------------------


def _run(argv: list[str], timeout_s: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)


def _binary() -> list[str]:
    return ["mono", str(MONO_DIR / "bin" / "netstick-mono.exe")]


def _outside(prop: dict[str, Any]) -> list[str]:
    """Values just outside the property's bounds (as -param text)."""
    integer = prop.get("type") == "integer"
    step = 1 if integer else 0.001
    out = []
    if "minimum" in prop:
        out.append(prop["minimum"] - step)
    if "exclusiveMinimum" in prop:
        out.append(prop["exclusiveMinimum"])
    if "maximum" in prop:
        out.append(prop["maximum"] + step)
    return [str(v) for v in out]


def test_workload_defaults_and_bounds_agree_with_the_schema(
    mono: mf.Manifest, tmp_path: Path
) -> None:
    schema = json.loads(WORKLOADS_SCHEMA.read_text())
    defs = schema["$defs"]
    workloads: dict[str, dict[str, Any]] = {}
    for name, spec in schema["workloads"].items():
        props = {}
        for key, prop in spec["properties"].items():
            if "$ref" in prop:
                prop = {**defs[prop["$ref"].rsplit("/", 1)[1]], **prop}
            props[key] = prop
        workloads[name] = props
    assert sorted(workloads) == sorted(mono.workloads)

    def server(name: str, *params: str) -> tuple[str, subprocess.CompletedProcess[str]]:
        log_dir = tmp_path / f"{name}-{len(params)}-{abs(hash(params))}"
        argv = [*_binary(), "-role", "server", "-port", str(free_port()), "-workload", name,
                "-duration", "0.01", "-log-dir", str(log_dir)]  # fmt: skip
        for p in params:
            argv += ["-param", p]
        return str(log_dir), _run(argv)

    jobs: list[tuple[str, str | None, str | None]] = [(name, None, None) for name in workloads]
    for name, props in workloads.items():
        for key, prop in props.items():
            if "enum" in prop:
                jobs.append((name, key, "not-" + str(prop["enum"][0])))
            if prop.get("type") == "boolean":
                jobs.append((name, key, "maybe"))
            for value in _outside(prop):
                jobs.append((name, key, value))
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(
            pool.map(lambda j: server(j[0], *([f"{j[1]}={j[2]}"] if j[1] else [])), jobs)
        )

    for (name, key, value), (log_dir, res) in zip(jobs, results, strict=True):
        if key is None:  # defaults, as recorded in meta.json params
            assert res.returncode == 0, res.stderr
            params = read_meta(Path(log_dir), "server")["params"]
            expected = {k: p["default"] for k, p in workloads[name].items() if "default" in p}
            assert set(params) == set(expected), name
            for k, default in expected.items():
                if isinstance(default, bool):
                    assert params[k] == str(default).lower(), (name, k)
                elif isinstance(default, int | float):
                    assert math.isclose(float(params[k]), default), (name, k, params[k])
                else:
                    assert params[k] == default, (name, k)
        else:
            assert res.returncode == 2, f"{name} {key}={value}: {res.returncode} {res.stderr}"
            assert f"-param {key}={value}" in res.stderr and res.stdout == "", res.stderr


# -- playing against the Go reference -----------------------------------------------------------


def _start_server(man: mf.Manifest, cell: dict[str, Any], log_dir: Path) -> subprocess.Popen[str]:
    port = free_port()
    argv = server_argv(man, cell, host="127.0.0.1", port=port, log_dir=log_dir)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the READY line comes first, or nothing (exit)
    assert lines.READY_RE.fullmatch(line.strip()), (line, proc.stderr.read() if proc.poll() else "")
    cell["port"] = port
    return proc


def _play(
    server_man: mf.Manifest, client_man: mf.Manifest, transport: str, log_dir: Path
) -> dict[str, str]:
    """Server of one prototype, 3 players of the other; returns world_loaded details by player."""
    cell = {"transport": transport, "workload": "world", "params": {"objects": "3000"}, "seed": 7,
            "players": 3, "duration_s": 1.5}  # fmt: skip
    server = _start_server(server_man, cell, log_dir)
    try:
        (argv,) = client_argvs(
            client_man, cell, host="127.0.0.1", port=cell["port"], log_dir=log_dir
        )
        client = _run(argv, timeout_s=30)
        assert client.returncode == 0, client.stderr
        assert "NETSTICK CONNECTED players=3 first=0" in client.stdout
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=5) == 0
    violations = checklogs.check_log_dir(log_dir)
    assert violations == [], [str(v) for v in violations]
    events = (log_dir / "client-0.events.csv").read_text().splitlines()
    loaded = {r.split(",")[1]: r.split(",")[4] for r in events if ",world_loaded," in r}
    assert sorted(loaded) == ["0", "1", "2"]
    probes = [r for r in events if ",probes," in r]
    assert len(probes) == 6 and all("lost=0" in r for r in probes), probes
    assert read_meta(log_dir, "server")["prototype"] == server_man.name
    assert read_meta(log_dir, "client-0")["prototype"] == client_man.name
    return loaded


@needs_reference_binary
@pytest.mark.parametrize("transport", ["tcp", "udp"])
def test_plays_against_the_go_reference_both_ways(
    mono: mf.Manifest, transport: str, tmp_path: Path
) -> None:
    ref = mf.load(REFERENCE_MANIFEST)
    mono_clients = _play(ref, mono, transport, tmp_path / "go-server")
    go_clients = _play(mono, ref, transport, tmp_path / "mono-server")
    # The same seed builds the same world in both: same generator, same draws, same snapshot bytes.
    assert mono_clients == go_clients
    assert all(d.startswith("objects=3000 bytes=") for d in mono_clients.values())


# -- a campaign beside the reference ------------------------------------------------------------


@needs_reference_binary
@needs_snakemake
def test_a_campaign_compares_it_with_the_reference(mono: mf.Manifest, tmp_path: Path) -> None:
    doc = {
        "name": "mono-vs-ref",
        "description": "the mono prototype beside the reference, tcp",
        "seed": 11,
        "repetitions": 2,
        "defaults": {"duration_s": 2.0, "network_profile": "lan"},
        "matrix": [
            {
                "name": "both",
                "prototypes": [
                    {"name": "mono", "manifest": str(MONO_MANIFEST), "transports": ["tcp"]},
                    {
                        "name": "reference",
                        "manifest": str(REFERENCE_MANIFEST),
                        "transports": ["tcp"],
                    },
                ],
                "players": [2],
                "workloads": [{"name": "idle"}],
            }
        ],
    }
    camp = tmp_path / "mono-vs-ref.yaml"
    camp.write_text(yaml.safe_dump(doc, sort_keys=False))
    t0 = time.monotonic()
    res = scratch.run(tmp_path, camp, timeout_s=170)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    rows = (tmp_path / "data" / "results" / "mono-vs-ref" / "runs.csv").read_text().splitlines()
    header = rows[0].split(",")
    recs = [dict(zip(header, r.split(","), strict=False)) for r in rows[1:]]
    assert len(recs) == 4 and {r["status"] for r in recs} == {"ok"}
    assert {r["prototype"] for r in recs} == {"mono", "reference"}
    assert all(float(r["rtt_net_p50_us"]) > 0 for r in recs)
    page = (tmp_path / "report" / "mono-vs-ref" / "index.html").read_text()
    assert "4 ok, 0 failed" in page
    assert len({r["cell_id"] for r in recs}) == 2
    # The cells table tells the two cells apart by their prototype (they differ in nothing else).
    table = rc.tables(page)["cells"]
    assert table[0][0] == "prototype"
    assert sorted(row[0] for row in table[1:]) == ["mono", "reference"]
    assert time.monotonic() - t0 < 170


# -- the transports benchmark -------------------------------------------------------------------


def test_bench_prototypes_measures_it_into_its_own_file(
    mono: mf.Manifest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from workflow.bench import prototypes as bench
    from workflow.cli.main import main

    assert bench.out_path(mf.load(REFERENCE_MANIFEST)).name == "prototypes.json"
    assert bench.out_path(mono).name == "prototypes-mono.json"
    out = tmp_path / "prototypes-mono.json"
    argv = ["bench", "prototypes", "--prototype", str(MONO_MANIFEST), "--players", "2",
            "--duration-s", "1", "--repetitions", "1", "--no-pin", "--transports", "udp",
            "--out", str(out), "--raw-dir", str(tmp_path / "raw")]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    assert doc["config"]["prototype_name"] == "mono" and doc["config"]["transports"] == ["udp"]
    (udp,) = doc["records"]
    assert udp["ok"], udp["error"]
    assert (
        udp["prototype"] == "mono" and udp["transport"] == "udp" and udp["players_connected"] == 2
    )
    assert udp["rtt_p50_us"] > 0 and "netstick-mono.exe" in udp["commands"]["server"]
    # A transport the prototype lacks is refused before anything runs.
    assert main([*argv[:-6], "--transports", "kcp"]) == 2
    assert "unknown transport(s) kcp" in capsys.readouterr().err
