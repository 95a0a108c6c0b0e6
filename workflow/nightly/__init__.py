"""The nightly that follows the libraries: what each library published since the last night
(upstream), the night's history kept outside any runner (archive), the first bad version or commit
of a confirmed regression (bisect). A floor above report and stats: it composes them with the
campaign and the harness, and only the CLI and the benches import it."""
