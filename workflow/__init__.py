"""Workflow: running cells, checking logs against prototypes/CONTRACT.md, the netstick CLI."""
