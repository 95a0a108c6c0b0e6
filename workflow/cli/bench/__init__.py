"""The tool measuring itself: `netstick bench NAME` writes data/bench/NAME.json."""
