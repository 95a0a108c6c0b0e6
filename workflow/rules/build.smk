# Build the Go reference prototype (one binary: server and player emulator). Unity prototypes
# are built by GameCI in CI; their manifests name the built player.

REF = REPO / "prototypes" / "reference"
REF_BINARY = REF / "bin" / "netstick-ref"


rule build_reference:
    input:
        REF / "go.mod",
        REF / "go.sum",
        sources=lambda wc: sorted(
            str(p)
            for p in REF.rglob("*")
            if p.suffix in {".go", ".c", ".h"} and "/bin/" not in str(p)
        ),
    output:
        REF_BINARY,
    shell:
        "cd {REF} && GOTOOLCHAIN=local go build -trimpath -o bin/netstick-ref ./cmd/netstick-ref"
