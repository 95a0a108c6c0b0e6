"""After the night's decision: every library version the confirming re-run found slower than the
release before it is bisected, and the bisection filed in the history beside the night.

    netstick history bisect data/results/nightly/regressions.json   (the nightly job, when
                                                                      anything was confirmed)

Between two releases the candidates are the releases the Go module proxy lists between them
(usually none: the night measures each new version beside the release before it, and the
bisection then only re-checks that pair with fresh interleaved runs); with clone, the library's
repository is cloned and the commits between the two release tags are bisected, so a confirmed
regression is named down to its first bad commit. A bisection that cannot run (no tag, no
clone) is written as inconclusive with the reason, never dropped.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from stats.history.versions import SLOWER
from workflow.files import write_json
from workflow.nightly import bisect as bisection
from workflow.nightly import bisect_setup
from workflow.nightly.candidates import CandidatesError

BISECTIONS_DIR: Final = "bisections"
CLONE_TIMEOUT_S: Final = 600.0
_MAJOR = re.compile(r"/v\d+$")


def confirmed_slower(decision: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The versions the re-run confirmed slower than their predecessor, once per (library,
    transport, version): the first metric that confirmed, in the decision's order."""
    seen: dict[tuple[str, str, str], dict[str, Any]] = {}
    for v in decision.get("versions", []):
        if v.get("verdict") == SLOWER and v.get("confirmed") is True:
            seen.setdefault((v["library"], v["transport"], v["version"]), dict(v))
    return list(seen.values())


def repository_url(library: str) -> str | None:
    """The git repository of a Go module hosted where the path says (github.com/o/r[/vN]):
    https://github.com/o/r.git; None for any other host (no guess)."""
    parts = _MAJOR.sub("", library).split("/")
    if len(parts) >= 3 and parts[0] in ("github.com", "gitlab.com", "codeberg.org"):
        return f"https://{'/'.join(parts[:3])}.git"
    return None


def _clone(library: str, work: Path) -> Path:
    """A blobless clone of the library's repository under work (reused when there)."""
    url = repository_url(library)
    if url is None:
        raise CandidatesError(f"{library}: no known repository host to clone for commits")
    dest = work / "repos" / re.sub(r"[^A-Za-z0-9._-]", "_", library)
    if not (dest / ".git").is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
        res = subprocess.run(
            ["git", "clone", "--quiet", "--filter=blob:none", url, str(dest)],
            capture_output=True, text=True, timeout=CLONE_TIMEOUT_S, check=False,
        )  # fmt: skip
        if res.returncode != 0:
            raise CandidatesError(f"git clone {url}: {res.stderr.strip()[-500:]}")
    return dest


def bisect_confirmed(
    decision: Mapping[str, Any],
    history_dir: Path,
    work: Path,
    settings: bisection.Settings,
    clone: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[Path]:
    """Bisect every confirmed slower version of the decision; each document written once to
    <history_dir>/<campaign>/bisections/<night stem>-<n>.json. Returns their paths."""
    night = Path(str(decision["night"])).stem
    folder = history_dir / str(decision["campaign"]) / BISECTIONS_DIR
    out: list[Path] = []
    for n, v in enumerate(confirmed_slower(decision), start=1):
        path = folder / f"{night}-{n}.json"
        if path.exists():  # bisected by an earlier attempt of this night
            out.append(path)
            continue
        request = bisect_setup.Request(
            good=str(v["predecessor"]), bad=str(v["version"]), library=v["library"],
            prototype=v.get("prototype") or "reference", transport=v["transport"],
            campaign=str(decision["campaign"]), cell=v.get("predecessor_cell"),
            metric=str(v["metric"]), seed=settings.seed,
        )  # fmt: skip
        where = work / f"{night}-{n}"
        try:
            if clone:
                request = _with_commits(request, _clone(v["library"], work))
            bisect_setup.run(request, where, path, settings, decision.get("night_id"), progress)
        except (CandidatesError, ValueError, OSError, subprocess.SubprocessError) as exc:
            write_json(path, _unrun(decision, v, str(exc)), sort_keys=False, strict=True)
        out.append(path)
    return out


def _with_commits(request: bisect_setup.Request, repo: Path) -> bisect_setup.Request:
    """The request over the commits between the two release tags of repo."""
    return bisect_setup.Request(**{**_fields(request), "repo": repo})


def _fields(request: bisect_setup.Request) -> dict[str, Any]:
    return {f: getattr(request, f) for f in bisect_setup.Request.__dataclass_fields__}


def _unrun(decision: Mapping[str, Any], v: Mapping[str, Any], why: str) -> dict[str, Any]:
    """The bisection document of a bisection that could not run: inconclusive, with why."""
    return {
        "schema": bisection.SCHEMA, "campaign": decision["campaign"],
        "night_id": decision.get("night_id"), "library": v["library"],
        "cell": v.get("predecessor_cell"), "metric": v["metric"],
        "good": v["predecessor"], "bad": v["version"], "candidates": [], "steps": [],
        "status": bisection.INCONCLUSIVE, "first_bad": None, "last_good": None,
        "bound": f"not bisected: {why}",
    }  # fmt: skip


def summary(paths: Sequence[Path], docs: Sequence[Mapping[str, Any]]) -> str:
    lines = []
    for path, doc in zip(paths, docs, strict=True):
        what = f"{doc['library']} {doc['good']}..{doc['bad']}"
        if doc["status"] == bisection.FOUND:
            lines.append(f"{what}: first bad {doc['first_bad']} ({path})")
        else:
            lines.append(f"{what}: inconclusive, {doc.get('bound')} ({path})")
    return "\n".join(lines) or "nothing confirmed slower: nothing to bisect"
