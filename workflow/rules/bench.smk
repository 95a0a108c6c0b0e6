# The transport benchmark of the reference prototypes (see README: Benchmark).


rule bench_prototypes:
    input:
        binary=rules.build_reference.output[0],
    output:
        "data/bench/prototypes.json",
    resources:
        bench=1,
    shell:
        ".venv/bin/netstick bench-prototypes --binary {input.binary} --out {output}"
