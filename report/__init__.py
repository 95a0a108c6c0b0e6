"""Report stage: turns measured results into tables and documents for readers."""
