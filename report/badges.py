"""The ACM badge self-check of a campaign's artifact: for each badge what is met and what is not,
from the artifact's facts (licence, DOI, runs, commits, executables) and what the checkout
documents and tests (facts.json's documentation). A self-check: evaluators decide.
"""

from __future__ import annotations

from typing import Any

# ACM's names, with its en dashes.
ACM_BADGES = (
    "Artifacts Available",
    "Artifacts Evaluated – Functional",  # noqa: RUF001
    "Artifacts Evaluated – Reusable",  # noqa: RUF001
    "Results Reproduced",
)


def licence_words(code: Any) -> str:
    """'MIT (LICENSE, sha256 ab12...)' for a licence file; the reason where there is none."""
    if not isinstance(code, dict):
        return str(code)
    name = code.get("spdx") or code.get("first_line")
    return f"{name} ({code.get('file')}, sha256 {code.get('sha256')})"


def _self_check(badge: str, checks: dict[str, bool]) -> dict[str, Any]:
    return {
        "badge": badge,
        "met": all(checks.values()),
        "checks": [{"check": k, "met": v} for k, v in checks.items()],
        "evidence": "self-check (evaluators decide): "
        + "; ".join(f"{k}: {'yes' if v else 'no'}" for k, v in checks.items()),
        "missing": "; ".join(k for k, v in checks.items() if not v)
        or "nothing the self-check sees",
    }


def acm_badges(doc: dict[str, Any], documentation: dict[str, Any]) -> list[dict[str, Any]]:
    """The four badges for the artifact doc (report/checklist.py); documentation: facts.json's
    (what README.md names, the Makefile's targets, the test files and schemas)."""
    cit = doc["citation"]
    remote = doc["public_remote"]
    code = doc["licences"]["code"]
    # Available needs a permanent archive with a DOI; a licence makes the archive reusable.
    available = _self_check(
        ACM_BADGES[0],
        {
            f"licence: {licence_words(code)}": isinstance(code, dict),
            "a permanent archive (e.g. Zenodo) with a DOI in CITATION.cff"
            + (f": {cit['doi']}" if cit.get("doi") else ""): bool(cit.get("doi")),
        },
    )
    available["evidence"] += f"; git remote: {remote}" if remote else "; no git remote"

    readme = documentation.get("readme") or {}
    targets = documentation.get("makefile_targets") or []
    tests = int(documentation.get("test_files") or 0)
    schemas = documentation.get("schemas") or []
    exp = doc["experiments"]
    res = doc["results"]["files"]
    functional = _self_check(
        ACM_BADGES[1],
        {
            "documented: README.md exists and names `make run` and `make test`": bool(
                readme.get("exists")
                and readme.get("names_make_run")
                and readme.get("names_make_test")
            ),
            "exercisable: Makefile has the targets run and test": {"run", "test"} <= set(targets),
            "exercisable: tests/python has test files": tests > 0,
            "complete: every planned run finished ok": exp["runs_planned"] > 0
            and exp["runs_ok"] == exp["runs_planned"],
            "complete: the stats tables exist (runs.parquet, cells.csv, findings.json)": all(
                isinstance(res.get(n), dict) for n in ("runs.parquet", "cells.csv", "findings.json")
            ),
            "consistent: all runs at one commit, equal to HEAD, from a clean tree": not doc["git"][
                "warnings"
            ],
            "consistent: every run recorded its prototype's executable sha256, one per "
            "prototype": bool(doc["prototypes"])
            and all(p["executable"]["same_in_all_runs"] for p in doc["prototypes"]),
        },
    )
    reusable = _self_check(
        ACM_BADGES[2],
        {
            "Functional self-check passes": functional["met"],
            f"configuration schemas in workflow/schemas ({', '.join(schemas) or 'none'})": bool(
                schemas
            ),
            f"tests ({tests} files in tests/python)": tests > 0,
            "README documents adding a prototype": bool(readme.get("documents_adding_a_prototype")),
        },
    )
    reproduced = {
        "badge": ACM_BADGES[3],
        "met": False,
        "checks": [{"check": "an independent reproduction", "met": False}],
        "evidence": "awarded only after an independent team obtains the main results with this "
        "artifact; the authors cannot claim it",
        "missing": "an independent reproduction",
    }
    return [available, functional, reusable, reproduced]
