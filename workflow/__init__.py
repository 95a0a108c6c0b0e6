"""Workflow: what to run (campaign/), how one run works (harness/), the netstick CLI (cli/)."""
