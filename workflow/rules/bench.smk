# The transport benchmark of the reference prototypes (see README: Benchmarks); not part of
# `all`: `snakemake data/bench/prototypes.json`.


rule bench_prototypes:
    input:
        binary=REF_BINARY,
    output:
        REPO / "data" / "bench" / "prototypes.json",
    resources:
        bench=1,
    shell:
        "{NETSTICK} bench prototypes --binary {input.binary} --out {output}"
