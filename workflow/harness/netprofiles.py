"""Network profiles: load, validate and render them for the emulator or for netem.

A profile names one network condition between the players and the server. The built-in ones
are in ``workflow/harness/network-profiles.yaml``; a campaign can add its own, as a mapping or
a YAML file of the same shape (profile name -> profile). Every profile is validated against
``workflow/schemas/network-profile.schema.json`` (which documents each key), plus the few rules
a schema cannot say clearly (loss and gilbert_elliott are exclusive, ...). Errors name the
profile, the key and what is allowed.

Loaded profiles are *normalized*: ``up`` and ``down`` are always present with every default
filled in, so a run's metadata records the exact condition, and the renderers need no defaults.

Two renderers:

- ``emulator_args``: the flags of ``netemu``, the user-space AF_PACKET emulator that runs in the
  middle namespace of a sandbox (sandbox.py). This is the path used on machines whose kernel
  has no netem, such as the development VM.
- ``netem_commands``: ``tc qdisc ... netem`` commands for kernels that have netem. That path is
  only unit-tested on the rendered commands here, because this machine's kernel has no netem
  (``sandbox.kernel_has_netem()``
  is False). Three keys have no exact netem equivalent: netem reorders
  jittered frames whatever ``reorder`` says; its queue limit counts packets, so ``queue_ms`` is
  not rendered (netem keeps its default limit of 1000 packets); and its ``loss P C`` correlation
  lowers the effective loss rate as C grows, where netemu's keeps the mean at P.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from prototypes.contract.schema_errors import schema_error_line
from prototypes.contract.yamlfile import load_yaml

HERE = Path(__file__).resolve().parent
BUILTIN_PROFILES_PATH = HERE / "network-profiles.yaml"
SCHEMA_PATH = HERE.parent / "schemas" / "network-profile.schema.json"

DIRECTIONS = ("up", "down")  # up = players -> server, down = server -> players
# netemu's direction prefixes: A is the players' side of the emulator, B the server's.
_NETEMU_DIRECTION = {"up": "ab", "down": "ba"}
DEFAULT_QUEUE_MS = 50.0  # also the schema's default; rendered explicitly so runs never
# depend on the emulator's own default
PROFILE_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")

Profile = dict[str, Any]


class ProfileError(ValueError):
    """A profile (or a file of profiles) is invalid; the message names profile, key, allowed."""


# -- loading and validation -------------------------------------------------------------------


@functools.cache
def _schema() -> dict[str, Any]:
    with SCHEMA_PATH.open(encoding="utf-8") as f:
        schema: dict[str, Any] = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def _semantic_errors(profile: Mapping[str, Any]) -> list[str]:
    """Rules the schema does not express readably: (key, problem) as 'key: problem'."""
    problems = []
    for direction in DIRECTIONS:
        d = profile.get(direction) or {}
        if d.get("loss", 0) > 0 and "gilbert_elliott" in d:
            problems.append(
                f"{direction}.loss: loss and gilbert_elliott are exclusive; allowed: one of them"
            )
        if d.get("loss_correlation", 0) > 0 and not d.get("loss", 0) > 0:
            problems.append(
                f"{direction}.loss_correlation: needs {direction}.loss > 0; allowed: "
                "0 when there is no Bernoulli loss"
            )
        if "queue_ms" in d and not d.get("rate_bps", 0) > 0:
            problems.append(
                f"{direction}.queue_ms: only applies with {direction}.rate_bps > 0; allowed: "
                "leave queue_ms out, or set rate_bps"
            )
    return problems


def validate_profile(name: str, profile: Any, source: str = "") -> Profile:
    """Validate one profile and return its normalized copy (every default filled in).

    Raises ProfileError with one line per problem: ``network profile NAME (SOURCE): key K:
    what was expected``.
    """
    where = f"network profile {name!r}" + (f" ({source})" if source else "")
    if not isinstance(name, str) or not PROFILE_NAME_RE.match(name):
        raise ProfileError(
            f"{where}: bad profile name; allowed: 1-40 characters of a-z, 0-9 and '-', "
            "starting with a letter or digit"
        )
    if not isinstance(profile, Mapping):
        raise ProfileError(
            f"{where}: expected a mapping of keys (description, up, down, force_emulator), "
            f"got {type(profile).__name__}"
        )
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(
        validator.iter_errors(dict(profile)), key=lambda e: [str(p) for p in e.absolute_path]
    )
    lines = [schema_error_line(where, e) for e in errors]
    if not lines:
        lines = [f"{where}: key {p}" for p in _semantic_errors(profile)]
    if lines:
        raise ProfileError("\n".join(lines))
    return _normalize(profile)


def _normalize(profile: Mapping[str, Any]) -> Profile:
    out: Profile = {
        "description": profile["description"],
        "force_emulator": bool(profile.get("force_emulator", False)),
    }
    for direction in DIRECTIONS:
        given = profile.get(direction) or {}
        d: dict[str, Any] = {
            "delay_ms": given.get("delay_ms", 0),
            "jitter_ms": given.get("jitter_ms", 0),
            "jitter_dist": given.get("jitter_dist", "normal"),
            "reorder": given.get("reorder", False),
            "loss": given.get("loss", 0),
            "loss_correlation": given.get("loss_correlation", 0),
            "rate_bps": given.get("rate_bps", 0),
        }
        if "gilbert_elliott" in given:
            d["gilbert_elliott"] = dict(given["gilbert_elliott"])
        if d["rate_bps"] > 0:
            d["queue_ms"] = given.get("queue_ms", DEFAULT_QUEUE_MS)
        out[direction] = d
    return out


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read network profiles: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ProfileError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ProfileError(
            f"{path}: expected a mapping of profile name -> profile, got {type(data).__name__}"
        )
    return data


def _validate_all(profiles: Mapping[str, Any], source: str) -> dict[str, Profile]:
    problems = []
    out = {}
    for name, profile in profiles.items():
        try:
            out[name] = validate_profile(name, profile, source)
        except ProfileError as exc:
            problems.append(str(exc))
    if problems:
        raise ProfileError("\n".join(problems))
    return out


@functools.cache
def _builtin() -> dict[str, Profile]:
    return _validate_all(_read_yaml(BUILTIN_PROFILES_PATH), str(BUILTIN_PROFILES_PATH))


def builtin_profiles() -> dict[str, Profile]:
    """The built-in profiles, validated and normalized (a fresh copy)."""
    return copy.deepcopy(_builtin())


def load_profiles(custom: Mapping[str, Any] | str | Path | None = None) -> dict[str, Profile]:
    """Built-in profiles plus custom ones (a mapping name -> profile, or a YAML file of those).

    A custom profile may not reuse a built-in name: 'lan' must mean the same in every campaign.
    """
    profiles = builtin_profiles()
    if custom is None:
        return profiles
    if isinstance(custom, str | Path):
        source = str(custom)
        raw = _read_yaml(Path(custom))
    elif isinstance(custom, Mapping):
        source = "custom profiles"
        raw = dict(custom)
    else:
        raise ProfileError(
            f"custom network profiles: expected a mapping or a YAML file path, got "
            f"{type(custom).__name__}"
        )
    clashes = sorted(set(raw) & set(profiles))
    if clashes:
        raise ProfileError(
            f"{source}: custom network profile(s) {', '.join(clashes)} redefine built-in "
            f"profiles; allowed: any other name (built-in: {', '.join(sorted(profiles))})"
        )
    profiles.update(_validate_all(raw, source))
    return profiles


def get_profile(name: str, custom: Mapping[str, Any] | str | Path | None = None) -> Profile:
    """One profile by name (built-in or custom), normalized."""
    profiles = load_profiles(custom)
    if name not in profiles:
        raise ProfileError(
            f"network profile {name!r} is not defined; allowed: {', '.join(sorted(profiles))}"
        )
    return profiles[name]


def custom_name(profile: Mapping[str, Any]) -> str:
    """The name of an inline custom profile: ``custom`` + 8 hex digits of its canonical JSON
    (the same as the cell id uses, workflow/layout.py)."""
    canonical = json.dumps(profile, sort_keys=True)
    return "custom" + hashlib.sha256(canonical.encode()).hexdigest()[:8]


def resolve(
    spec: str | Mapping[str, Any], custom: Mapping[str, Any] | str | Path | None = None
) -> tuple[str, Profile]:
    """(name, normalized profile) of a cell's ``network_profile``: a profile name (built-in or
    from ``custom``) or an inline profile object."""
    if isinstance(spec, str):
        return spec, get_profile(spec, custom)
    if isinstance(spec, Mapping):
        name = custom_name(spec)
        return name, validate_profile(name, spec, "inline network_profile of the cell")
    raise ProfileError(
        f"network_profile: expected a profile name or a profile object, got {type(spec).__name__}"
    )


# -- rendering --------------------------------------------------------------------------------


def _direction(profile: Mapping[str, Any], direction: str) -> Mapping[str, Any]:
    d = profile.get(direction) or {}
    if not isinstance(d, Mapping):
        raise ProfileError(f"profile key {direction}: expected a mapping, got {type(d).__name__}")
    return d


def _impaired(d: Mapping[str, Any]) -> bool:
    return bool(
        d.get("delay_ms", 0) > 0
        or d.get("jitter_ms", 0) > 0
        or d.get("loss", 0) > 0
        or "gilbert_elliott" in d
        or d.get("rate_bps", 0) > 0
    )


def needs_emulator(profile: Mapping[str, Any]) -> bool:
    """True if the profile impairs either direction, or asks for the emulator explicitly."""
    if profile.get("force_emulator", False):
        return True
    return any(_impaired(_direction(profile, direction)) for direction in DIRECTIONS)


def _num(x: float) -> str:
    """A number without exponent or trailing zeros (Go's flag and duration parsers accept it)."""
    if isinstance(x, int) or float(x).is_integer():
        return str(int(x))
    return f"{float(x):.6f}".rstrip("0").rstrip(".")


def emulator_args(
    profile: Mapping[str, Any], iface_a: str | None = None, iface_b: str | None = None
) -> list[str]:
    """netemu's command-line flags for a profile (without the binary and without -stats-out).

    ``iface_a`` is the emulator's interface on the players' side, ``iface_b`` the server's side;
    when given they come first as ``-a``/``-b``. Then per direction (``ab`` = up = players ->
    server, ``ba`` = down) only the flags of what is impaired, e.g.
    ``-ab-delay 25ms -ab-jitter 5ms -ab-dist normal -ab-loss 0.05 -ab-rate-bps 1000000
    -ab-queue-ms 50``. A pass-through profile renders to just ``-a IF -b IF``.
    """
    args: list[str] = []
    if iface_a is not None:
        args += ["-a", iface_a]
    if iface_b is not None:
        args += ["-b", iface_b]
    for direction in DIRECTIONS:
        d = _direction(profile, direction)
        p = "-" + _NETEMU_DIRECTION[direction] + "-"
        if d.get("delay_ms", 0) > 0:
            args += [p + "delay", _num(d["delay_ms"]) + "ms"]
        if d.get("jitter_ms", 0) > 0:
            args += [p + "jitter", _num(d["jitter_ms"]) + "ms"]
            args += [p + "dist", str(d.get("jitter_dist", "normal"))]
        if d.get("reorder", False):
            args += [p + "reorder"]
        if d.get("loss", 0) > 0:
            args += [p + "loss", _num(d["loss"])]
            if d.get("loss_correlation", 0) > 0:
                args += [p + "loss-corr", _num(d["loss_correlation"])]
        ge = d.get("gilbert_elliott")
        if ge:
            for key in ("p", "r", "h", "k"):
                args += [p + "ge-" + key, _num(ge[key])]
        if d.get("rate_bps", 0) > 0:
            args += [p + "rate-bps", str(int(d["rate_bps"]))]
            args += [p + "queue-ms", _num(d.get("queue_ms", DEFAULT_QUEUE_MS))]
    return args


def _pct(x: float) -> str:
    return _num(round(x * 100, 6)) + "%"


def netem_commands(profile: Mapping[str, Any], iface_up: str, iface_down: str) -> list[list[str]]:
    """``tc qdisc replace ... netem`` commands for kernels that have netem.

    ``iface_up`` is the interface whose egress carries players -> server (the players' veth),
    ``iface_down`` the server's veth. Run each command inside the namespace that owns the
    interface (prefix it with ``Sandbox.prefix(role)``). A direction without impairment gets no
    command. Not expressible in netem and therefore not rendered: ``reorder: false`` with jitter
    (netem reorders jittered frames) and ``queue_ms`` (netem's limit counts packets);
    ``loss_correlation`` is rendered as netem's correlation, whose meaning differs (see the
    schema).
    """
    commands = []
    for direction, iface in (("up", iface_up), ("down", iface_down)):
        d = _direction(profile, direction)
        if not _impaired(d):
            continue
        cmd = ["tc", "qdisc", "replace", "dev", iface, "root", "netem"]
        delay_ms = d.get("delay_ms", 0)
        jitter_ms = d.get("jitter_ms", 0)
        if delay_ms > 0 or jitter_ms > 0:
            cmd += ["delay", _num(delay_ms) + "ms"]
            if jitter_ms > 0:
                cmd += [_num(jitter_ms) + "ms"]
                # netem's jitter without a distribution is uniform (delay +- jitter), like ours.
                if d.get("jitter_dist", "normal") == "normal":
                    cmd += ["distribution", "normal"]
        if d.get("loss", 0) > 0:
            cmd += ["loss", "random", _pct(d["loss"])]
            if d.get("loss_correlation", 0) > 0:
                cmd += [_pct(d["loss_correlation"])]
        ge = d.get("gilbert_elliott")
        if ge:
            # netem's gemodel takes p, r, then the loss probabilities in the bad and the good
            # state (its man page calls them 1-h and 1-k); our h and k are those probabilities.
            cmd += ["loss", "gemodel", *(_pct(ge[k]) for k in ("p", "r", "h", "k"))]
        if d.get("rate_bps", 0) > 0:
            cmd += ["rate", f"{int(d['rate_bps'])}bit"]
        commands.append(cmd)
    return commands


def describe(profile: Mapping[str, Any]) -> str:
    """One line summarizing a profile's impairment (for logs)."""
    parts = []
    for direction in DIRECTIONS:
        d = _direction(profile, direction)
        if not _impaired(d):
            parts.append(f"{direction}: none")
            continue
        bits = []
        if d.get("delay_ms", 0) or d.get("jitter_ms", 0):
            bits.append(f"{_num(d.get('delay_ms', 0))}±{_num(d.get('jitter_ms', 0))} ms")
        if d.get("loss", 0):
            bits.append(f"loss {_pct(d['loss'])}")
        if d.get("gilbert_elliott"):
            ge = d["gilbert_elliott"]
            p, r = ge["p"], ge["r"]
            mean = (p * ge["h"] + r * ge["k"]) / (p + r) if p + r > 0 else ge["k"]
            bits.append(f"GE loss {_pct(mean)}")
        if d.get("rate_bps", 0):
            bits.append(f"{_num(d['rate_bps'] / 1e6)} Mbit/s")
        parts.append(f"{direction}: " + ", ".join(bits))
    if profile.get("force_emulator") and not any(
        _impaired(_direction(profile, direction)) for direction in DIRECTIONS
    ):
        return "pass-through emulator"
    return "; ".join(parts)
