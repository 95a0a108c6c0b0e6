"""What to run: campaigns expanded into cells and runs, the raw layout, records, progress."""
