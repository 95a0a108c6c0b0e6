"""Monitors: samplers that watch the processes and host of a run, and their readers."""
