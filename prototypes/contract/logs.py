"""Readers for the prototype logs of prototypes/CONTRACT.md section 3.

rtt.csv has one reader, read_rtt_csv (read_rtt_logs for a log directory), and every stage that
reads the file uses it. Its bad-row policy:

- the header must be exactly the schema's columns, else LogFormatError naming the file and the
  expected header (nothing of such a file is read);
- a row is read when it has the six fields, t_unix_ns, player and seq are integers (int64),
  rtt_us is a number, kind is exactly net, app or lib, and send_late_us is a number or empty
  (empty becomes NaN); numbers are read as numpy's text parser reads them;
- any other row (wrong field count, a value that is not a number, an unknown kind, a blank
  line) is left out and counted: RttColumns.bad_rows maps the file to its count, so a bad row is
  never silent and never a crash;
- a partial last line (no newline: a writer killed mid-row) is neither read nor counted.

rtt.csv files hold ~100k-1M rows per run, so the rows are parsed with polars' columnar CSV
reader (typed columns, about 4x numpy's text parser here); a file it refuses (a field that is
not a number, a wrong field count) is parsed again with numpy's C parser chunk by chunk and line
by line only where that refuses too, under the same rules, to find and count its bad rows. Both
paths give the same values and the same counts (tests/python/unit/test_checklogs.py).
The reader says nothing about contract violations that still parse (a negative RTT, a time
outside the run): prototypes.contract.checklogs.check_log_dir reports those.
"""

from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from prototypes.contract.columns import EVENTS_COLUMNS, RTT_COLUMNS, RTT_KINDS, TICKS_COLUMNS

# The kind is read as (at most) four bytes, so that a longer word cannot pass as a kind name.
_RTT_DTYPE = np.dtype(
    [
        ("t_unix_ns", np.int64),
        ("player", np.int64),
        ("seq", np.int64),
        ("rtt_us", np.float64),
        ("kind", "S4"),
        ("send_late_us", np.float64),
    ]
)
_KIND_NAMES = np.array(RTT_KINDS)
_KIND_BYTES = tuple(k.encode() for k in RTT_KINDS)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_CHUNK_LINES = 4096  # lines per chunk when a file has bad rows


class LogFormatError(ValueError):
    """A log file that cannot be read at all (its header is not the schema's); names the file."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.reason = message


@dataclass(frozen=True, slots=True)
class RttColumns:
    """Columns of one or more rtt.csv files; send_late_us is NaN where the field was empty.

    kind holds the names, kind_code their index in RTT_KINDS; bad_rows maps each file that had
    rows left out (module docstring) to how many.
    """

    t_unix_ns: npt.NDArray[np.int64]
    player: npt.NDArray[np.int64]
    seq: npt.NDArray[np.int64]
    rtt_us: npt.NDArray[np.float64]
    kind: npt.NDArray[np.str_]
    send_late_us: npt.NDArray[np.float64]
    kind_code: npt.NDArray[np.int8]
    bad_rows: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.t_unix_ns.size)

    @staticmethod
    def concat(parts: list[RttColumns]) -> RttColumns:
        if not parts:
            return _columns(*_empty())
        bad: dict[str, int] = {}
        for p in parts:
            bad.update(p.bad_rows)
        arrays = {
            name: np.concatenate([getattr(p, name) for p in parts])
            for name in (*RTT_COLUMNS, "kind_code")
        }
        return RttColumns(**arrays, bad_rows=bad)


def _empty() -> tuple[npt.NDArray[np.void], npt.NDArray[np.int8]]:
    return np.empty(0, dtype=_RTT_DTYPE), np.empty(0, dtype=np.int8)


def _columns(
    rec: npt.NDArray[np.void], codes: npt.NDArray[np.int8], bad: dict[str, int] | None = None
) -> RttColumns:
    return RttColumns(
        t_unix_ns=rec["t_unix_ns"],
        player=rec["player"],
        seq=rec["seq"],
        rtt_us=rec["rtt_us"],
        kind=_KIND_NAMES[codes] if codes.size else np.empty(0, dtype="<U3"),
        send_late_us=rec["send_late_us"],
        kind_code=codes,
        bad_rows=bad or {},
    )


def _check_header(path: Path, header: bytes, columns: tuple[str, ...]) -> None:
    expected = ",".join(columns).encode()
    if header.rstrip(b"\n") != expected:
        raise LogFormatError(
            path,
            f"header is {header.rstrip().decode(errors='replace')!r}, "
            f"expected {expected.decode()!r}",
        )


def _kind_codes(kinds: npt.NDArray[np.bytes_]) -> npt.NDArray[np.int8]:
    """Index of each kind in RTT_KINDS, -1 for anything else."""
    codes = np.full(kinds.shape, -1, dtype=np.int8)
    for code, name in enumerate(_KIND_BYTES):
        codes[kinds == name] = code
    return codes


def _int64(text: bytes) -> int:
    if b"_" in text:  # Python's int() takes 1_000; numpy's parser (the fast path) does not
        raise ValueError(text)
    value = int(text)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(text)
    return value


def _float(text: bytes) -> float:
    if b"_" in text:
        raise ValueError(text)
    return float(text)


def _parse_lines(body: bytes) -> tuple[npt.NDArray[np.void], npt.NDArray[np.int8], int]:
    """The slow path, one line at a time under the same rules as _parse_fast: (good rows, their
    kind codes, bad row count)."""
    rows = []
    codes = []
    bad = 0
    for line in body.split(b"\n")[:-1]:
        fields = line.split(b",")
        try:
            if len(fields) != len(RTT_COLUMNS):
                raise ValueError(line)
            t, player, seq, rtt, kind, late = fields
            code = _KIND_BYTES.index(kind)  # ValueError for an unknown kind
            row = (
                _int64(t),
                _int64(player),
                _int64(seq),
                _float(rtt),
                kind,
                _float(late),
            )
        except ValueError:
            bad += 1
            continue
        rows.append(row)
        codes.append(code)
    return np.array(rows, dtype=_RTT_DTYPE), np.array(codes, dtype=np.int8), bad


def _parse_fast(body: bytes) -> tuple[npt.NDArray[np.void], npt.NDArray[np.int8], int]:
    """numpy's parser on whole lines: (good rows, their kind codes, bad row count); raises
    ValueError when a row does not parse (the caller then looks line by line)."""
    rec = np.loadtxt(
        io.BytesIO(body),
        delimiter=",",
        dtype=_RTT_DTYPE,
        comments=None,
        ndmin=1,
    )
    codes = _kind_codes(rec["kind"])
    known = codes >= 0
    # numpy skips blank lines without a word: they count as bad rows like any other.
    bad = body.count(b"\n") - int(rec.size) + int(np.count_nonzero(~known))
    if bad:
        rec, codes = rec[known], codes[known]
    return rec, codes, bad


def _parse_chunks(body: bytes) -> tuple[npt.NDArray[np.void], npt.NDArray[np.int8], int]:
    """A file with bad rows: numpy's parser chunk by chunk, line by line only in the chunks it
    refuses, so that a few bad rows cost little more than none."""
    newlines = np.flatnonzero(np.frombuffer(body, dtype=np.uint8) == ord("\n"))
    ends = [*(newlines[_CHUNK_LINES - 1 :: _CHUNK_LINES] + 1).tolist(), len(body)]
    recs, codes, bad = [], [], 0
    start = 0
    for end in ends:
        if end <= start:
            continue
        chunk = body[start:end]
        try:
            rec, code, n_bad = _parse_fast(chunk)
        except ValueError:
            rec, code, n_bad = _parse_lines(chunk)
        recs.append(rec)
        codes.append(code)
        bad += n_bad
        start = end
    return np.concatenate(recs), np.concatenate(codes), bad


def _parse_columnar(text: bytes) -> RttColumns | None:
    """polars' reader on text's lines after the first (the header: skipped by the reader, so
    that a file's bytes are not copied): the columns with blank lines, unknown kinds and empty
    required fields left out and counted (RttColumns.bad_rows["-"]), or None when a field does
    not parse or a row has another field count (the caller then takes numpy's path)."""
    import polars as pl

    schema = {
        "t_unix_ns": pl.Int64, "player": pl.Int64, "seq": pl.Int64, "rtt_us": pl.Float64,
        "kind": pl.String, "send_late_us": pl.Float64,
    }  # fmt: skip
    try:
        df = pl.read_csv(
            text, has_header=False, skip_lines=1, new_columns=list(RTT_COLUMNS), schema=schema,
            quote_char=None, raise_if_empty=False, truncate_ragged_lines=False,
            infer_schema=False,
        )  # fmt: skip
    except (pl.exceptions.ComputeError, pl.exceptions.ShapeError, ValueError):
        return None
    # An unknown kind is null here, its code too.
    codes = df["kind"].cast(pl.Enum(list(RTT_KINDS)), strict=False).to_physical()
    required = [c for c in RTT_COLUMNS if c != "send_late_us"]
    if codes.null_count() or any(df[c].null_count() for c in required):  # only then a filter
        good = codes.is_not_null()
        for c in required:
            good &= df[c].is_not_null()
        df, codes = df.filter(good), codes.filter(good)
    # Blank lines are skipped by the reader: every newline not a good row is a bad row.
    bad = text.count(b"\n") - 1 - df.height
    kind_code = codes.cast(pl.Int8).to_numpy()
    return RttColumns(
        t_unix_ns=df["t_unix_ns"].to_numpy(),
        player=df["player"].to_numpy(),
        seq=df["seq"].to_numpy(),
        rtt_us=df["rtt_us"].to_numpy(),
        kind=_KIND_NAMES[kind_code] if kind_code.size else np.empty(0, dtype="<U3"),
        send_late_us=df["send_late_us"].fill_null(np.nan).to_numpy(),
        kind_code=kind_code,
        bad_rows={"-": bad} if bad else {},
    )


def read_rtt_csv(path: Path | str) -> RttColumns:
    """Read one client-<k>.rtt.csv into columns under the module docstring's bad-row policy."""
    path = Path(path)
    data = path.read_bytes()
    first = data.find(b"\n")
    header = data if first < 0 else data[:first]
    _check_header(path, header + b"\n", RTT_COLUMNS)
    # Only whole lines count (a killed writer may leave a partial one): a copy only then.
    end = data.rfind(b"\n") + 1
    if end <= len(header) + 1:
        return _columns(*_empty())
    text = data if end == len(data) else data[:end]
    fast = _parse_columnar(text)
    if fast is not None:
        bad_rows = {str(path): fast.bad_rows["-"]} if fast.bad_rows else {}
        return dataclasses.replace(fast, bad_rows=bad_rows)
    # ",\n" can only be an empty last field (send_late_us): numpy's parser needs a number there.
    body = text[len(header) + 1 :].replace(b",\n", b",nan\n")
    try:
        rec, codes, bad = _parse_fast(body)
    except ValueError:
        rec, codes, bad = _parse_chunks(body)
    return _columns(rec, codes, {str(path): bad} if bad else None)


def read_rtt_logs(log_dir: Path | str) -> RttColumns:
    """All client-*.rtt.csv files of a log directory, concatenated (bad_rows per file)."""
    files = sorted(Path(log_dir).glob("client-*.rtt.csv"))
    return RttColumns.concat([read_rtt_csv(f) for f in files])


def read_small_csv(path: Path | str, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """Rows of a small contract CSV (events, ticks) as dicts of strings; header must match."""
    path = Path(path)
    lines = path.read_text(encoding="utf-8").split("\n")
    _check_header(path, (lines[0] + "\n").encode(), columns)
    # The last element is "" for a file ending in "\n", or a partial line: drop it either way.
    rows = []
    for line in lines[1:-1]:
        fields = line.split(",", len(columns) - 1)  # the last column (detail) is free text
        if len(fields) == len(columns):
            rows.append(dict(zip(columns, fields, strict=True)))
    return rows


def read_events_csv(path: Path | str) -> list[dict[str, str]]:
    return read_small_csv(path, EVENTS_COLUMNS)


def read_ticks_csv(path: Path | str) -> list[dict[str, str]]:
    return read_small_csv(path, TICKS_COLUMNS)


def parse_detail(detail: str) -> dict[str, str]:
    """`key=value key=value` of an event's detail column as a dict (other words are ignored)."""
    out: dict[str, str] = {}
    for word in detail.split():
        key, sep, value = word.partition("=")
        if sep:
            out[key] = value
    return out
