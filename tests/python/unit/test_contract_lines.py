"""prototypes.contract.lines: the NETSTICK READY and CONNECTED lines, written and read back."""

from __future__ import annotations

from prototypes.contract import lines


def test_ready_line_matches_the_contract_grammar_and_parses_back() -> None:
    line = lines.ready_line("udp", "127.0.0.1", 7777, 42)
    m = lines.READY_RE.fullmatch(line)
    assert m is not None and m["transport"] == "udp" and m["port"] == "7777"
    assert lines.fields(line) == {
        "role": "server",
        "transport": "udp",
        "addr": "127.0.0.1:7777",
        "pid": "42",
        "schema": "1",
    }


def test_connected_line_matches_the_contract_grammar_and_parses_back() -> None:
    line = lines.connected_line(200, 0, 0.512)
    assert lines.CONNECTED_RE.fullmatch(line) is not None
    got = lines.fields(line)
    assert got["players"] == "200" and got["first"] == "0" and float(got["connect_s"]) == 0.512


def test_lines_off_the_grammar_do_not_match() -> None:
    assert lines.READY_RE.fullmatch("NETSTICK READY role=server addr=127.0.0.1:7777") is None
    bad = "NETSTICK CONNECTED players=two first=0 connect_s=1"
    assert lines.CONNECTED_RE.fullmatch(bad) is None
