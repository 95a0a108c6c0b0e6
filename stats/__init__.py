"""Stats: pure functions that turn tidy samples into summaries."""
