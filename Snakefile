# Netstick's workflow: build the systems under test, then measure them.
#
#   snakemake --cores 2            # everything below (the transport benchmark for now)
#   snakemake -n                   # what would run
#
# Benchmark jobs declare the resource `bench=1`; run with `--resources bench=1` (the default
# below) so that two measurements never share the machine.

workflow.global_resources.setdefault("bench", 1)


include: "workflow/rules/build.smk"
include: "workflow/rules/bench.smk"


rule all:
    input:
        "data/bench/prototypes.json",
