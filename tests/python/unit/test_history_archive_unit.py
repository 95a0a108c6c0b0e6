"""The pure part of the history archive (workflow/nightly/archive.py): which night a file of the
history layout belongs to, nights grouped and ordered oldest first, what the branch lacks, and
credentials kept out of messages. The git side: e2e/toolchain/test_history_archive.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from workflow.nightly import archive

A = "20261120T020000Z-aaaaaaaaaaaa"
B = "20261121T020000Z-bbbbbbbbbbbb"


def test_night_of_reads_the_three_kinds_of_file() -> None:
    assert archive.night_of(f"nightly/{A}.csv") == ("nightly", "20261120T020000Z", A[17:])
    assert archive.night_of(f"nightly/verdicts/{A}.json")[1:] == ("20261120T020000Z", A[17:])
    assert archive.night_of(f"nightly/bisections/{A}-12.json")[2] == A[17:]


@pytest.mark.parametrize(
    "rel",
    [
        "nightly/notes.txt",
        f"{A}.csv",  # no campaign
        f"nightly/verdicts/{A}.csv",
        f"nightly/bisections/{A}.json",  # a bisection without its number
        f"nightly/other/{A}.json",
        f"nightly/2026-11-20-{A[17:]}.csv",  # not the store's stamp
    ],
)
def test_a_file_outside_the_layout_is_named(rel: str) -> None:
    with pytest.raises(archive.ArchiveError, match=rf"^{rel}: not a file of the history layout"):
        archive.night_of(rel)


def test_nights_grouped_by_stem_oldest_first() -> None:
    files = [
        f"nightly/bisections/{B}-2.json",
        f"nightly/{B}.csv",
        f"nightly/bisections/{B}-1.json",
        f"nightly/verdicts/{A}.json",
        f"nightly/{A}.csv",
        f"lan/{B}.csv",
    ]
    nights = archive.group_nights(files)
    assert [(n.campaign, n.stem) for n in nights] == [("nightly", A), ("lan", B), ("nightly", B)]
    assert nights[0].files == (f"nightly/{A}.csv", f"nightly/verdicts/{A}.json")
    assert nights[2].files == (
        f"nightly/{B}.csv",
        f"nightly/bisections/{B}-1.json",
        f"nightly/bisections/{B}-2.json",
    )


def test_new_nights_keeps_what_the_branch_lacks_and_refuses_a_change() -> None:
    nights = archive.group_nights([f"n/{A}.csv", f"n/verdicts/{A}.json", f"n/{B}.csv"])
    ids = {f"n/{A}.csv": "1", f"n/verdicts/{A}.json": "2", f"n/{B}.csv": "3"}
    assert archive.new_nights(nights, ids, {}) == nights
    part = archive.new_nights(nights, ids, {f"n/{A}.csv": "1", f"n/{B}.csv": "3"})
    assert [(n.stem, n.files) for n in part] == [(A, (f"n/verdicts/{A}.json",))]
    assert archive.new_nights(nights, ids, dict(ids)) == []
    with pytest.raises(archive.ArchiveError, match=rf"other content than h/n/{B}\.csv"):
        archive.new_nights(nights, ids, {f"n/{B}.csv": "9"}, where="h")


def test_commit_message_names_campaign_night_and_files() -> None:
    (night,) = archive.group_nights([f"nightly/{A}.csv", f"nightly/verdicts/{A}.json"])
    text = archive.commit_message(night, "run https://example.org/run/1")
    subject, _, body = text.partition("\n\n")
    assert subject == f"nightly: night {A}"
    assert f"nightly/verdicts/{A}.json" in body and body.endswith("run https://example.org/run/1\n")


def test_hidden_files_are_not_part_of_the_store(tmp_path: Path) -> None:
    (tmp_path / "nightly" / "verdicts").mkdir(parents=True)
    (tmp_path / "nightly" / f"{A}.csv").write_text("x\n")
    (tmp_path / "nightly" / f".{B}.csv.tmp-123").write_text("half\n")  # an interrupted write
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "x").write_text("x\n")
    assert archive.history_files(tmp_path) == [f"nightly/{A}.csv"]


def test_credentials_never_reach_a_message(tmp_path: Path) -> None:
    url = "https://x-access-token:ghs_secret@github.com/o/r.git"
    assert "ghs_secret" not in str(archive.GitError(["git", "push", url], 128, f"fatal: {url}"))
    assert archive.remote_spec(url) == url
    assert archive.remote_spec(str(tmp_path)) == str(tmp_path.resolve())
    with pytest.raises(archive.ArchiveError, match="neither a URL nor an existing"):
        archive.remote_spec(str(tmp_path / "missing.git"))
