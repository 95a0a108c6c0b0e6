from pathlib import Path

# Build the Go reference prototype (one binary: server and player emulator).

REF = "prototypes/reference"


rule build_reference:
    input:
        f"{REF}/go.mod",
        f"{REF}/go.sum",
        sources=lambda wc: sorted(
            str(p)
            for p in Path(REF).rglob("*")
            if p.suffix in {".go", ".c", ".h"} and "/bin/" not in str(p)
        ),
    output:
        f"{REF}/bin/netstick-ref",
    shell:
        "cd {REF} && GOTOOLCHAIN=local go build -trimpath -o bin/netstick-ref ./cmd/netstick-ref"
