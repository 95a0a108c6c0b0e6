"""What the tests share and pytest does not collect: paths, skip marks, test doubles (the fake
prototype, a conformant stand-in), builders of raw campaigns and report tables, the Snakemake
and SLURM helpers, and the checks of a rendered report.

tests/python/conftest.py holds only fixtures and the tier hook; tests import from here."""
