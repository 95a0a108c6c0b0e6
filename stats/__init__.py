"""Stats: computes every number the reports show (per-run summaries, intervals, comparisons,
scaling, regressions, findings as records) from the raw runs, into data/results/."""
