"""Monitors: samplers that watch the processes and host of a run (DESIGN.md section 2)."""
