"""The prototype contract of prototypes/CONTRACT.md as code: log columns and their one reader,
the NETSTICK lines, the log checker, manifests and their schema, the conformance checker."""
