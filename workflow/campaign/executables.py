"""Whether a prototype's executables are here: present, built by the workflow before its
runs (a manifest's build command), or made elsewhere (build.external, e.g. Unity builds by
GameCI) and then possibly missing. Planning asks this so that a run never fails for want of
a program it could have been told about before it started."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from prototypes.contract import manifest as manifests
from workflow.files import REPO, shown_path

# The Unity prototypes campaigns may name before their builds exist in a checkout (GameCI builds
# them where a Unity licence is available); their cells are listed as not runnable, not dropped.
UNITY_PROTOTYPES = ("unity/fishnet", "unity/mirror", "unity/nfe", "unity/ngo")


def available_prototypes() -> list[str]:
    """Names of the prototypes of this checkout: prototypes/<name>/prototype.yaml."""
    root = REPO / "prototypes"
    return sorted(
        str(m.parent.relative_to(root)) for m in root.glob("**/prototype.yaml") if m.is_file()
    )


def builds_in_workflow(man: manifests.Manifest) -> bool:
    """Whether the workflow builds this prototype before its runs (workflow/rules/build.smk):
    every prototype whose manifest has a build command."""
    return man.build_command is not None


def executable_problem(man: manifests.Manifest) -> str | None:
    """Why this prototype's runs could not start (an executable is missing and nothing builds
    it, or it cannot be executed), or None. Found when planning: a missing executable would
    otherwise fail every run before READY and be retried. Builds made elsewhere
    (build.external) that are missing are no error: see missing_builds."""
    for key, exe in zip(("executable", "client_executable"), man.executables, strict=False):
        shown = shown_path(exe)
        if not exe.exists():
            if builds_in_workflow(man) or man.build_external is not None:
                continue
            return (
                f"{shown_path(man.path)}: key {key}: {shown} does not exist and the "
                "manifest has no build.command; expected a built prototype (build it first) or "
                "a build command the workflow runs"
            )
        if not exe.is_file():
            return f"{shown_path(man.path)}: key {key}: {shown} is not a file"
        if not man.launcher and not os.access(exe, os.X_OK):
            return (
                f"{shown_path(man.path)}: key {key}: {shown} is not executable "
                "(chmod +x it, or name the interpreter that runs it in launcher)"
            )
    return None


def _shown_command(man: manifests.Manifest, argv: Sequence[str]) -> str:
    """A manifest's command as a user types it from the repository's top: a program given as a
    path relative to the manifest's directory is shown relative to the repository."""
    program = argv[0]
    if "/" in program and not Path(program).is_absolute():
        program = shown_path(man.directory / program)
    return shlex.join([program, *argv[1:]])


def missing_builds(man: manifests.Manifest, transport: str, version: str) -> str | None:
    """Why the cells of this (transport, library version) cannot run in this checkout: the
    builds made elsewhere (build.external) are not here. The reason names the missing files,
    the command that downloads them and who builds them; None when they are present or the
    prototype is built here."""
    if man.build_external is None:
        return None
    vb = man.version_build(transport, version)
    programs = vb.executables if vb is not None else man.executables
    missing = [p for p in programs if not p.exists()]
    if not missing:
        return None
    which = f"library {vb.library} {vb.version}" if vb is not None else "the pinned build"
    fetch = (
        f"download them with `{_shown_command(man, man.build_fetch)}`, or build them: "
        if man.build_fetch
        else "build them: "
    )
    return (
        f"{shown_path(man.path)} ({which}): {', '.join(shown_path(p) for p in missing)} "
        f"missing; {fetch}{man.build_external}"
    )
