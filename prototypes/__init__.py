"""Prototypes: the systems under test (reference/: Go) and their contract (contract/: Python)."""
