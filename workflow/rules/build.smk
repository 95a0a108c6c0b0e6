# Build the systems under test before their runs: the Go reference prototype (one binary: server
# and player emulator) by its own rule, every other prototype the plan runs by its manifest's
# build.command (one rule each). Unity prototypes are built by GameCI in CI; their manifests name
# the built player and have no build command.

import shlex
import subprocess

from prototypes.contract.library_builds import VersionBuildError
from workflow.harness.builds import build_version

REF = REPO / "prototypes" / "reference"
REF_BINARY = REF / "bin" / "netstick-ref"
# Run in prototypes/reference; the build settings setup wrote (CGO_ENABLED=0 without libenet).
REF_BUILD = (
    "{ [ ! -f ../../.tools/netstick-build.env ] || . ../../.tools/netstick-build.env; } && "
    "GOTOOLCHAIN=local go build -trimpath -o bin/netstick-ref ./cmd/netstick-ref"
)


def _ref_sources():
    return sorted(
        p
        for p in REF.rglob("*")
        # Tests and their shared support package are not part of the binary: editing one
        # rebuilds nothing.
        if p.suffix in {".go", ".c", ".h"}
        and "/bin/" not in str(p)
        and "/transporttest/" not in str(p)
        and not p.name.endswith("_test.go")
    )


rule build_reference:
    input:
        REF / "go.mod",
        REF / "go.sum",
        sources=lambda wc: [str(p) for p in _ref_sources()],
    output:
        REF_BINARY,
    shell:
        # Braces doubled: Snakemake formats a rule's shell command ({{ is a literal brace).
        "cd {REF} && " + REF_BUILD.replace("{", "{{").replace("}", "}}")


# One rule per other prototype with a build command; params carry the values (a rule body in a
# loop would see the loop's last manifest).
for _i, _man in enumerate(campaigns.manifests_of(PLAN).values()):
    if _man.build_command is None or _man.executable == REF_BINARY.resolve():
        continue

    rule:
        name:
            f"build_prototype_{_i}_{_man.name}"
        localrule: True
        input:
            _man.path,
        output:
            str(_man.executable),
        params:
            cwd=str(_man.directory),
            command=shlex.join(_man.build_command),
            timeout_s=_man.build_timeout_s,
        shell:
            "cd {params.cwd:q} && timeout {params.timeout_s} {params.command}"


def _build_before_runs():
    """Build, before the DAG runs, every prototype of the plan whose executable is missing or
    (the reference) older than its sources. Snakemake 9 runs a job that updates an input marked
    ancient() and then stops without starting the jobs that need it (snakemake issue 4166): a
    campaign started after editing the prototype would measure nothing. Dry runs still show the
    build rules above and build nothing."""
    todo = []
    for man in campaigns.manifests_of(PLAN).values():
        if man.executable == REF_BINARY.resolve():
            stale = not REF_BINARY.exists() or any(
                p.stat().st_mtime > REF_BINARY.stat().st_mtime
                for p in [REF / "go.mod", REF / "go.sum", *_ref_sources()]
            )
            if stale:
                todo.append((REF_BUILD, REF, 900))
        elif man.build_command is not None and not man.executable.exists():
            todo.append((shlex.join(man.build_command), man.directory, man.build_timeout_s))
    for command, cwd, timeout_s in todo:
        print(f"building: cd {cwd} && {command}", file=sys.stderr)
        res = subprocess.run(
            command, shell=True, cwd=cwd, capture_output=True, text=True, timeout=timeout_s
        )
        if res.returncode != 0:
            raise WorkflowError(
                f"building a prototype failed (exit {res.returncode}): cd {cwd} && {command}\n"
                + (res.stderr or res.stdout)[-3000:]
            )
    # Other library versions the plan names: one build each from the same source against that
    # version's module file, cached (rebuilt only when a source or its .mod/.sum changed). A
    # version that does not build stops here, naming the library, the version and the
    # compiler's message.
    for vb in campaigns.version_builds_of(PLAN):
        try:
            if build_version(vb):
                print(f"built {vb.library}@{vb.version}: {vb.executable}", file=sys.stderr)
        except VersionBuildError as exc:
            raise WorkflowError(str(exc)) from None


def _dry_run():
    # workflow.dryrun is not known yet while the Snakefile is parsed: read the command line
    # (-n, --dry-run, --dryrun, or -n among combined short flags such as -np).
    return any(
        a in ("--dry-run", "--dryrun")
        or (a.startswith("-") and not a.startswith("--") and "n" in a[1:] and a[1:].isalpha())
        for a in sys.argv[1:]
    )


if not _dry_run():
    _build_before_runs()
