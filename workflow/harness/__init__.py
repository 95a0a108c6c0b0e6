"""How one run works: the cell, sandbox, network profiles and emulator, processes' placement,
monitors, provenance, and the run's directory."""
