"""`netstick upstream check|prepare`: what the followed libraries published since the last
night (workflow/nightly/upstream.py), and those versions generated, built and declared for the
night's plan (workflow/nightly/upstream_builds.py). The parser is in main.py."""

from __future__ import annotations

import argparse
import json
import sys

from workflow.files import shown_path
from workflow.nightly import upstream, upstream_builds


def check(args: argparse.Namespace) -> int:
    """Check every followed library of the prototypes, write the document, print the summary.
    Exit 0 when at least one library was checked (the others' errors are in the document), 1
    when nothing could be, 2 for a bad argument."""
    try:
        prototypes = upstream.prototype_manifests(args.prototype or ())
    except ValueError as exc:
        print(f"netstick upstream check: {exc}", file=sys.stderr)
        return 2
    doc = upstream.check(prototypes, args.history_dir, args.campaign)
    out = args.out or upstream.default_out(args.campaign)
    upstream.write(doc, out)
    print(upstream.summary(doc))
    print(f"\nwrote {shown_path(out)}")
    if not upstream.anything_checked(doc):
        what = "no library is followed" if not doc["libraries"] else "no library could be checked"
        print(f"netstick upstream check: {what}", file=sys.stderr)
        return 1
    return 0


def prepare(args: argparse.Namespace) -> int:
    """Generate, build and declare tonight's new versions of each checked prototype
    (versions/upstream.json beside its manifest); a version that does not build is listed
    there with the compiler's message, never a failure of the night."""
    path = args.upstream or upstream.default_out(args.campaign)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        print(
            f"netstick upstream prepare: {path}: {exc}; run netstick upstream check",
            file=sys.stderr,
        )
        return 2
    for name in sorted({lib["prototype"] for lib in doc["libraries"] if lib["source"] == "go"}):
        lock = upstream_builds.prepare(doc, name)
        for library, entry in lock["libraries"].items():
            print(f"{name} {library}: measure {', '.join(entry['measure'])}")
            for nb in entry["not_built"]:
                first = str(nb["build_error"]).splitlines()[0]
                print(f"  {nb['version']}: does not build: {first}")
    return 0
