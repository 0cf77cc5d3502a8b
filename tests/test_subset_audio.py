"""Withheld-audio selection and the mixed-modality copy of a data dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from punct.bin import subset_audio
from punct.data.withhold import select_withheld
from punct.errors import PunctInputError
from punct.wordtable import read_word_table

UTTS = [f"utt{i:02d}" for i in range(10)]


def test_select_withheld_is_a_fixed_share() -> None:
    chosen = select_withheld(UTTS, 0.3, 1)
    assert len(chosen) == 3 and chosen <= set(UTTS)
    assert select_withheld(reversed(UTTS), 0.3, 1) == chosen  # order does not matter
    assert select_withheld(UTTS, 0.3, 2) != chosen  # the seed does
    assert select_withheld(UTTS, 0.5, 1) >= chosen  # nested as the share grows
    assert select_withheld(UTTS, 0.0, 1) == set()
    assert select_withheld(UTTS, 1.0, 1) == set(UTTS)
    with pytest.raises(PunctInputError, match="share"):
        select_withheld(UTTS, 1.2, 1)


@pytest.fixture
def src(tmp_path: Path) -> Path:
    d = tmp_path / "test"
    d.mkdir()
    rows = ["utt_id\tidx\tword\tform\tpunct\tcap\tstart\tend\tpause_after"]
    for u in UTTS:
        rows.append(f"{u}\t0\thello\tHello\tO\tFIRST_CAP\t0.100\t0.400\t0.200")
        rows.append(f"{u}\t1\tworld\tworld\tPERIOD\tO\t0.600\t0.900\t0.300")
    (d / "words.tsv").write_text("\n".join(rows) + "\n")
    (d / "text").write_text("".join(f"{u} Hello world.\n" for u in UTTS))
    (d / "fbank.scp").write_text("".join(f"{u} /x/fbank.ark:{i}\n" for i, u in enumerate(UTTS)))
    (d / "w2v.scp").write_text("".join(f"{u} /x/w2v.ark:{i}\n" for i, u in enumerate(UTTS)))
    (d / "wav.scp").write_text("rec /x/rec.wav\n")
    (d / "align").mkdir()
    return d


def test_mixed_copy(src: Path, tmp_path: Path) -> None:
    dst = tmp_path / "test_mixed"
    assert subset_audio.main(["--src", str(src), "--dst", str(dst), "--share", "0.5",
                              "--seed", "1"]) == 0
    withheld = (dst / "withheld").read_text().split()
    assert withheld == sorted(select_withheld(UTTS, 0.5, 1)) and len(withheld) == 5
    for stream in ("fbank", "w2v"):
        keys = [line.split()[0] for line in (dst / f"{stream}.scp").read_text().splitlines()]
        assert keys == [u for u in UTTS if u not in withheld]
    assert (dst / "wav.scp").read_text() == "rec /x/rec.wav\n"  # recordings untouched
    assert (dst / "text").read_text() == (src / "text").read_text()
    assert not (dst / "align").exists()
    table = read_word_table(dst / "words.tsv")
    for u, rows in table.items():
        if u in withheld:
            assert all(r.start is None and r.pause_after is None for r in rows)
        else:
            assert rows[1].start == 0.6 and rows[0].pause_after == 0.2
    assert [r.punct for r in table[withheld[0]]] == [(), ("PERIOD",)]


def test_keep_timings_and_stream_choice(src: Path, tmp_path: Path) -> None:
    dst = tmp_path / "m"
    assert subset_audio.main(["--src", str(src), "--dst", str(dst), "--share", "0.3",
                              "--streams", "fbank", "--keep-timings"]) == 0
    withheld = (dst / "withheld").read_text().split()
    assert len(withheld) == 3
    assert len((dst / "fbank.scp").read_text().splitlines()) == 7
    assert (dst / "w2v.scp").read_text() == (src / "w2v.scp").read_text()
    assert read_word_table(dst / "words.tsv")[withheld[0]][0].start == 0.1


def test_errors(src: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert subset_audio.main(["--src", str(tmp_path / "none"), "--dst", str(tmp_path / "d"),
                              "--share", "0.5"]) == 2
    assert subset_audio.main(["--src", str(src), "--dst", str(src), "--share", "0.5"]) == 1
    assert subset_audio.main(["--src", str(src), "--dst", str(tmp_path / "d"),
                              "--share", "0.5", "--streams", "pitch"]) == 2
    assert "pitch.scp" in capsys.readouterr().err
    (src / "fbank.scp").write_text("utt00 /x:1\n\n")
    assert subset_audio.main(["--src", str(src), "--dst", str(tmp_path / "d"),
                              "--share", "0.5"]) == 1
    assert "fbank.scp:2" in capsys.readouterr().err
