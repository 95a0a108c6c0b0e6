"""Where a run is written: its work directory, publishing it complete, and a full disk.

A run is written to a work directory next to its run directory (workflow.layout.work_dir) and
renamed only when complete: an ok run to the run directory, a failed one to a new attempt among
the failed attempts (layout.attempt_dir). The names are the layout's; this module only writes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from pathlib import Path
from typing import Any

from workflow import layout
from workflow.files import read_json, write_json

# A run writes logs, monitor samples and metadata: below this much free space a run cannot be
# trusted to finish writing, so none starts (a full disk otherwise burns every attempt).
MIN_FREE_BYTES = 16 * 1024 * 1024


def finished(out: Path) -> bool:
    """Whether out already holds a complete ok run (a resumed campaign never redoes it)."""
    done = read_json(out / "status.json")
    return done is not None and done.get("status") == "ok"


def open_work_dir(out: Path) -> Path:
    """This process's empty work directory for the run out, with its logs/ directory."""
    tmp = layout.work_dir(out, os.getpid())
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "logs").mkdir(parents=True)
    return tmp


def set_aside_dead_work_dirs(out: Path) -> list[Path]:
    """Move the work directories of earlier writers of the run out among its failed attempts
    (as <stamp>-stale): a process killed with SIGKILL (with its whole group) leaves its
    .<run>.tmp-<pid>/ behind. Called under the run's lock, so no other process writes any of
    them; kept, not deleted, as every attempt is. Returns where they went."""
    moved = []
    for path, pid in layout.work_dirs(out):
        if pid == os.getpid():
            continue
        layout.failed_dir(out).mkdir(exist_ok=True)
        dest = layout.stale_dir(out)
        n = 1
        while dest.exists():
            n += 1
            dest = dest.with_name(f"{layout.stale_dir(out).name}-{n}")
        os.rename(path, dest)
        moved.append(dest)
    return moved


def space_problem(where: Path) -> str | None:
    """Why a run cannot be written under where (too little free space), or None."""
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return None
    if free >= MIN_FREE_BYTES:
        return None
    return (
        f"disk full: {where} has {free // 1024} KiB free; a run needs at least "
        f"{MIN_FREE_BYTES // (1024 * 1024)} MiB (free space, then resume the campaign)"
    )


def is_disk_full(exc: OSError) -> bool:
    return exc.errno in (errno.ENOSPC, errno.EDQUOT)


def disk_full_detail(exc: OSError, tmp: Path) -> str:
    # A failed write() names no file; the open() that failed does.
    where = exc.filename or f"the run's files in {tmp}"
    return f"disk full: {exc.strerror} writing {where}; {space_problem(tmp.parent) or ''}".rstrip(
        "; "
    )


def discard_on_full_disk(tmp: Path, out: Path, status: dict[str, Any]) -> Path:
    """The attempt could not be written completely: remove its partial files (freeing the space
    they took) and keep its status alone as the failed attempt, when even that fits."""
    shutil.rmtree(tmp, ignore_errors=True)
    dest = layout.attempt_dir(out, os.getpid())
    try:
        dest.mkdir(parents=True)
        write_json(dest / "status.json", status)
    except OSError:
        shutil.rmtree(dest, ignore_errors=True)
        with contextlib.suppress(OSError):  # only if no earlier attempt is kept there
            dest.parent.rmdir()
        return out
    return dest


def publish(tmp: Path, out: Path, ok: bool) -> Path:
    """Rename the finished run into place: ok -> out, failed -> a new failed attempt of out."""
    if ok:
        if out.exists():  # a partial or failed leftover: keep it apart, never mix
            _set_aside(out)
        os.rename(tmp, out)
        return out
    layout.failed_dir(out).mkdir(exist_ok=True)
    dest = layout.attempt_dir(out, os.getpid())
    os.rename(tmp, dest)
    return dest


def _set_aside(out: Path) -> None:
    layout.failed_dir(out).mkdir(exist_ok=True)
    os.rename(out, layout.stale_dir(out))
