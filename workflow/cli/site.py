"""`netstick history site CAMPAIGN --out DIR`: the nightly's trend site from the history store.
stats.history.site_data computes the document, report.site draws it (report imports no stats);
the parser is in main.py."""

from __future__ import annotations

import argparse
import sys
import time

from report.site.build import SiteError, write_site
from stats.history import HistoryError
from stats.history.site_data import site_document


def site(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    try:
        doc = site_document(args.history_dir, args.campaign)
        index = write_site(doc, args.out)
    except (HistoryError, SiteError) as exc:
        print(f"netstick history site: {exc}", file=sys.stderr)
        return 2
    size = sum(p.stat().st_size for p in args.out.iterdir() if p.is_file())
    newest = doc["newest"]
    confirmed = sum(
        v["status"] == "confirmed regression" for v in (newest["verdicts"] if newest else [])
    )
    print(
        f"{index}: {len(doc['nights']['file'])} nights, {len(doc['series'])} series, "
        f"{confirmed} confirmed regression(s) on the newest night; {size / 1e6:.2f} MB in "
        f"{time.perf_counter() - t0:.1f} s"
    )
    return 0
