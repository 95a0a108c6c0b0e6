"""bench-prototypes: every reference transport at 50 and 200 players, checked against targets.

Each (transport, players, repetition) is one cell run by the harness (cells.py), as a campaign's
run is: stream workload, 100 B at 60 Hz per player with the periodic app probes beside it, a
12 s window after all players connected, network profile lan (the run's own namespaces joined by
a veth with root, plain loopback without), the server pinned to CPU 0 and the client processes
to CPU 1. Its numbers are the stats stage's per-run numbers, plus the connect time and players
per client core. A failed run is recorded with its reason and the bench goes on.

The JSON file (written through record.py) holds one record per (transport, players) with the
median of its repetitions and every repetition, the provenance of the numbers, and a `targets`
section with each target's measured value and verdict.

    netstick bench prototypes [--prototype MANIFEST] [--transports tcp,udp] [--players 50,200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prototypes.contract import manifest as manifests
from workflow.bench import cells, client_profile, floor, options, record
from workflow.bench.targets import Target, evaluate_targets, targets_text
from workflow.files import REPO, repo_relative
from workflow.harness import environment

BENCH_PLAYERS = (50, 200)

TARGETS = (
    Target(
        "players_per_client_core",
        "players_per_client_core",
        ">=",
        1000.0,
        cells.TRANSPORTS,
        200,
        note="200 players cannot show 1,000 players on one core directly: the value is "
        "players / client_cpu_cores, which assumes client CPU grows linearly with players",
    ),
    Target("send_late_p99", "send_late_p99_us", "<=", 500.0, cells.TRANSPORTS, 200),
    Target("udp_rtt_p50", "rtt_p50_us", "<=", 100.0, ("udp",), 50),
    Target("connect_time", "connect_s", "<=", 2.0, cells.TRANSPORTS, 200),
    # Against the machine's floor measured in the same run (workflow/bench/floor).
    Target("udp_players_of_floor", "players_per_client_core_of_floor", ">=", 0.25, ("udp",), 200),
    Target("udp_rtt_over_floor", "rtt_p50_over_floor", "<=", 2.5, ("udp",), 50),
)


def out_path(man: manifests.Manifest, bench_dir: Path = options.BENCH_DIR) -> Path:
    """Where a prototype's figures go: prototypes.json for the reference (the README's table),
    prototypes-<name>.json for another prototype, so measuring one never overwrites another's."""
    if man.path.resolve() == cells.REFERENCE_MANIFEST.resolve():
        return bench_dir / "prototypes.json"
    return bench_dir / f"prototypes-{man.name}.json"


def run(
    out: Path,
    raw_dir: Path,
    *,
    transports: Sequence[str] = cells.TRANSPORTS,
    players: Sequence[int] = BENCH_PLAYERS,
    duration_s: float = cells.DURATION_S,
    repetitions: int = 3,
    pin: bool = True,
    binary: Path | None = None,
    prototype: Path = cells.REFERENCE_MANIFEST,
    progress: cells.Progress = cells.print_progress,
) -> dict[str, Any]:
    """Run the matrix through the harness, write the JSON document to out, and return it.

    binary: the prototype executable (default: the one prototype's manifest names);
    prototype: the manifest whose transports are run.
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    work = raw_dir / stamp
    manifest = cells.manifest_for(binary, work, prototype)
    prov = environment.collect(REPO, manifests.load(manifest).executable)
    config = {
        "transports": list(transports),
        "players": list(players),
        "repetitions": repetitions,
        "workload": "stream",
        "params": cells.STREAM_PARAMS,
        "duration_s": duration_s,
        "network_profile": cells.NETWORK_PROFILE,
        "measurement_window": "the harness's window in meta.json, from the last CONNECTED line "
        "to the clients' exit, read by stats.window as for every campaign's run",
        "pinning": cells.PINNING if pin else None,
        "percentile_method": "numpy linear (Hyndman-Fan type 7)",
        "prototype": str(manifest),
        "prototype_name": manifests.load(manifest).name,
    }
    records: list[dict[str, Any]] = []
    matrix = [(t, n) for t in transports for n in players]
    # The floor before the matrix and after it: the same hour as the cells.
    progress("the machine's floor (udp_floor.c) ...")
    floors = [floor.measure(rate_hz=float(cells.STREAM_PARAMS["rate"]))]
    for i, (transport, n) in enumerate(matrix, start=1):
        reps = []
        for r in range(1, repetitions + 1):
            cell = cells.bench_cell(
                transport, n, r, duration_s=duration_s, pin=pin, prototype=manifest
            )
            progress(f"[{i}/{len(matrix)}] {transport} {n} players, run {r}/{repetitions} ...")
            reps.append(cells.run_one(cell, work / f"{transport}-{n}" / cell["run_id"]))
        rec = cells.combine_repetitions(reps)
        records.append(_against(rec, floors))
        state = "ok" if rec["ok"] else f"FAILED: {(rec['error'] or '').splitlines()[0]}"
        progress(f"[{i}/{len(matrix)}] {transport} {n} players: {state}")
        # After every cell: an interrupted bench keeps what it measured.
        record.write(out, "bench-prototypes", _body(config, floors, records), prov=prov)
    progress("the machine's floor again ...")
    floors.append(floor.measure(rate_hz=float(cells.STREAM_PARAMS["rate"])))
    records = [_against(r, floors) for r in records]
    body = _body(config, floors, records)
    body["client_profiles"] = _profiles(manifest, transports, max(players), pin, progress)
    return record.write(out, "bench-prototypes", body, prov=prov)


def _profiles(
    manifest: Path, transports: Sequence[str], players: int, pin: bool, progress: cells.Progress
) -> dict[str, Any]:
    """Where each transport's client CPU goes: one profiled cell each (client_profile.py)."""
    man = manifests.load(manifest)
    if man.name != "reference":
        return {"skipped": "profiles are taken of the Go reference prototype only"}
    out: dict[str, Any] = {}
    for t in transports:
        progress(f"profiling the {t} client at {players} players ...")
        out[t] = client_profile.profile(man.executable, t, players, cells.STREAM_PARAMS, pin=pin)
    return out


def _body(
    config: dict[str, Any], floors: list[dict[str, Any]], records: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "config": config,
        "floor": _floor_summary(floors),
        "records": records,
        "targets": evaluate_targets(records, TARGETS),
        "targets_note": TARGETS[0].note,
    }


def _floor_summary(floors: list[dict[str, Any]]) -> dict[str, Any]:
    """The floor's figures as the median of its measurements (before and after the cells)."""
    keys = ("cpu_us_per_round_trip", "players_per_client_core", "pingpong_rtt_p50_us",
            "pingpong_rtt_p99_us", "pingpong_sender_cpu_us_per_round_trip",
            "players_per_client_core_two_process")  # fmt: skip
    return {
        **{k: statistics.median(f[k] for f in floors) for k in keys},
        "measurements": floors,
        "what": "udp_floor.c: CPU per UDP round trip with one system call per datagram (a "
        "client's share is half; players per client core at the stream's rate), and a "
        "two-process ping-pong on loopback, pinned like the cells: its round trip and its "
        "sender's CPU per round trip (the two-process floor: every datagram wakes a sleeping "
        "peer, as a client's probes wake the server)",
    }


def _against(rec: dict[str, Any], floors: list[dict[str, Any]]) -> dict[str, Any]:
    """A cell's record with its players per client core and RTT p50 as ratios to the floor."""
    summary = _floor_summary(floors)
    ppc, rtt = rec.get("players_per_client_core"), rec.get("rtt_p50_us")
    return {
        **rec,
        "players_per_client_core_of_floor": round(ppc / summary["players_per_client_core"], 4)
        if ppc
        else None,
        "players_per_client_core_of_two_process_floor": round(
            ppc / summary["players_per_client_core_two_process"], 4
        )
        if ppc
        else None,
        "rtt_p50_over_floor": round(rtt / summary["pingpong_rtt_p50_us"], 3) if rtt else None,
    }


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--prototype",
        type=Path,
        default=None,
        metavar="MANIFEST",
        help="the prototype measured (default prototypes/reference/prototype.yaml)",
    )
    p.add_argument(
        "--transports",
        type=options.names,
        default=None,
        help="default: every transport of the prototype",
    )
    p.add_argument("--players", type=options.counts, default=[50, 200], help="default 50,200")
    p.add_argument(
        "--duration-s", type=options.seconds(0, True), default=12.0, help="window (default 12)"
    )
    p.add_argument("--repetitions", type=options.positive_int, default=3, help="runs per cell")
    p.add_argument("--no-pin", action="store_true", help="do not pin server/client to CPUs 0/1")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"default {options.BENCH_DIR / 'prototypes.json'}, or prototypes-<name>.json for "
        "--prototype",
    )
    p.add_argument("--raw-dir", type=Path, default=options.DATA / "raw" / "bench-prototypes")
    options.binary_arg(p)


def _refused(problem: str) -> int:
    print(f"netstick bench prototypes: {problem}", file=sys.stderr)
    return 2


def main(args: argparse.Namespace) -> int:
    try:
        man = manifests.load(args.prototype or cells.REFERENCE_MANIFEST)
    except manifests.ManifestError as exc:
        return _refused(f"--prototype: {repo_relative(str(exc))}")
    if args.binary is None and not man.executable.is_file():
        build = " ".join(man.build_command or ()) or "its build"
        return _refused(
            f"{repo_relative(str(man.executable))} not found; build it with `{build}` in "
            f"{repo_relative(str(man.directory))}"
        )
    transports = args.transports or list(man.transport_names)
    problem = cells.check_transports(transports, man.path)
    if problem:
        return _refused(problem)
    out = args.out or out_path(man)
    doc = run(
        out,
        args.raw_dir,
        prototype=man.path,
        transports=transports,
        players=args.players,
        duration_s=args.duration_s,
        repetitions=args.repetitions,
        pin=not args.no_pin,
        binary=args.binary,
    )
    print(targets_text(doc["targets"]))
    print(client_profile.profiles_text(doc.get("client_profiles", {})))
    failed = sum(not r["ok"] for r in doc["records"])
    print(f"{len(doc['records'])} cells, {failed} failed; results in {out}")
    return 0
