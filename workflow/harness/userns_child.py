"""The harness inside its user namespace (workflow/harness/userns.py starts it): run the cell of
argv[1] into its directory as uid 0 of the namespace, and write the outcome to argv[2].

    python -m workflow.harness.userns_child CELL.json OUTCOME.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from workflow.harness.run import run_cell


def main(argv: list[str]) -> int:
    doc = json.loads(Path(argv[0]).read_text())
    outcome = run_cell(doc["cell"], Path(doc["out"]), job=doc.get("job"))
    result = {
        "status": outcome.status,
        "reason": outcome.reason,
        "detail": outcome.detail,
        "path": str(outcome.path),
        "interrupted_by": outcome.interrupted_by,
    }
    Path(argv[1]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
