# Build the systems under test before their runs: the Go reference prototype (one binary: server
# and player emulator) by its own rule, every other prototype the plan runs by its manifest's
# build.command (one rule each). Unity prototypes are built by GameCI in CI; their manifests name
# the built player and have no build command.

import shlex

REF = REPO / "prototypes" / "reference"
REF_BINARY = REF / "bin" / "netstick-ref"


rule build_reference:
    input:
        REF / "go.mod",
        REF / "go.sum",
        sources=lambda wc: sorted(
            str(p)
            for p in REF.rglob("*")
            # Tests are not part of the binary: editing one rebuilds nothing.
            if p.suffix in {".go", ".c", ".h"}
            and "/bin/" not in str(p)
            and not p.name.endswith("_test.go")
        ),
    output:
        REF_BINARY,
    shell:
        "cd {REF} && GOTOOLCHAIN=local go build -trimpath -o bin/netstick-ref ./cmd/netstick-ref"


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
