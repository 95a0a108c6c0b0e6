"""Conformance of a running prototype to prototypes/CONTRACT.md (sections 1-3), from its manifest.

`check_prototype(manifest, transport)` starts the prototype's real server and client processes on
loopback in short scenarios and reports every contract violation it sees, in plain words, as one
CheckResult per check (CHECKS): the READY line, short runs whose logs must pass
checklogs.check_log_dir, SIGTERM and SIGKILL behaviour, and the exit codes for bad
arguments, a missing server, a busy port and a server lost mid-run. A check collects all of its
violations, not only the first, and a failing scenario does not stop the others.

Scenarios (each feeds several checks; `only` runs just those its checks need):
    run-<workload>  server + 5 players in 2 client processes for a few seconds, then SIGTERM
    sigterm-client  server + a client that is SIGTERMed mid-run; a second server on the same port
    server-lost     server + a client; the server is SIGKILLed mid-run
    bad-args        unknown flag and unknown workload, for both roles
    no-server       a client whose server does not exist

Processes are started with processes.spawn (each in its own process group) and every
group is killed in a finally block, so no check leaves a process behind.
"""

from prototypes.contract.conformance.check import check_prototype, format_table
from prototypes.contract.conformance.session import CHECKS, CheckResult, ConformanceError

__all__ = ["CHECKS", "CheckResult", "ConformanceError", "check_prototype", "format_table"]
