"""The netstick command: one parser (main.py) over every stage, imported lazily."""

from workflow.cli.main import main

__all__ = ["main"]
