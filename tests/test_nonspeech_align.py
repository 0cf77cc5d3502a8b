"""Non-speech tokens on real recordings: MFA files with ``[noise]``, ``<breath>`` and
``[laughter]`` written into the transcripts where the TextGrid has silence.

A copy of the MFA recording is prepared twice, with and without the markers (stage 1:
``rows_from_text`` -> words.tsv), aligned by ``punct.bin.align`` (dtw, pocketsphinx) and
evaluated against the TextGrid's words; the markers must change nothing. The TextGrid
copy holds the markers as intervals too: the ``textgrid`` aligner and the reference
reader drop them, and their time becomes pause.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest

from punct.align.base import AlignRequest, get_aligner, speech_request
from punct.align.evaluate import evaluate
from punct.bin.align import main as align_main
from punct.data.audio import load_requests
from punct.data.ctm import ctm_lines
from punct.data.textgrid import read_textgrid, textgrid_words
from punct.data.timed import TimedWord, pauses
from punct.wordtable import read_word_table, rows_from_text, write_word_table

MFA = Path("/work/shared/data/mfa_english_word_alignments")
needs_mfa = pytest.mark.skipif(not MFA.is_dir(), reason="MFA test recordings not present")
NAME = "acoustic_corpus"  # 26.7 s, 58 words, 11 pauses inside
MARKERS = ("[noise]", "<breath>", "[laughter]")
MIN_GAP = 0.15  # silences at least this long get a marker


def _marked_text(words: list[TimedWord], min_gap: float = MIN_GAP) -> tuple[str, int]:
    """The words with a marker in every silence of at least ``min_gap`` s (one before the
    first word too), and the number of markers."""
    out = [MARKERS[0]] if words[0].start >= min_gap else []
    for k, (w, nxt) in enumerate(itertools.pairwise(words)):
        out.append(w.word)
        if nxt.start - w.end >= min_gap:
            out.append(MARKERS[k % len(MARKERS)])
    out.append(words[-1].word)
    return " ".join(out), sum(1 for t in out if t in MARKERS)


def _marked_textgrid(src: Path, dst: Path) -> int:
    """A words-tier TextGrid (short text format) copied from ``src`` whose silent intervals
    of at least MIN_GAP s inside the speech are labelled with markers; returns how many."""
    grid = read_textgrid(src)
    ivs = grid.tier("words").intervals
    out = ['File type = "ooTextFile"', 'Object class = "TextGrid"', "", str(grid.xmin),
           str(grid.xmax), "<exists>", "1", '"IntervalTier"', '"words"', str(grid.xmin),
           str(grid.xmax), str(len(ivs))]
    n = 0
    for k, iv in enumerate(ivs):
        text = iv.text
        if not text.strip() and 0 < k < len(ivs) - 1 and iv.end - iv.start >= MIN_GAP:
            text = MARKERS[n % len(MARKERS)]
            n += 1
        out += [str(iv.start), str(iv.end), f'"{text}"']
    dst.write_text("\n".join(out) + "\n", encoding="utf-8")
    return n


def _data_dir(root: Path, text: str, wav: Path) -> Path:
    d = root
    d.mkdir(parents=True)
    write_word_table(d / "words.tsv", {NAME: rows_from_text(NAME, text, d / "text", 1)})
    (d / "wav.scp").write_text(f"{NAME} {wav}\n", encoding="utf-8")
    (d / "utt2lang").write_text(f"{NAME} en\n", encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The MFA copy: wav, the .lab with markers, the TextGrid with marker intervals."""
    root = tmp_path_factory.mktemp("mfa_nonspeech")
    wav = root / f"{NAME}.wav"
    shutil.copy(MFA / f"{NAME}.wav", wav)
    ref = textgrid_words(MFA / f"{NAME}.TextGrid")
    marked, n_marks = _marked_text(ref)
    (root / f"{NAME}.lab").write_text(marked + "\n", encoding="utf-8")
    grids = root / "textgrids"
    grids.mkdir()
    n_intervals = _marked_textgrid(MFA / f"{NAME}.TextGrid", grids / f"{NAME}.TextGrid")
    refs = root / "ref"
    refs.mkdir()
    (refs / f"{NAME}.ctm").write_text(
        "".join(ctm_lines(NAME, textgrid_words(grids / f"{NAME}.TextGrid"))), encoding="utf-8")
    plain = " ".join(w.word for w in ref)
    return {"root": root, "wav": wav, "ref": ref, "marked": marked, "n_marks": n_marks,
            "plain": plain, "grids": grids, "refs": refs, "n_intervals": n_intervals}


@needs_mfa
def test_markers_leave_the_word_table(corpus: dict) -> None:
    assert corpus["n_marks"] >= 8 and corpus["n_intervals"] >= 8
    words = [r.word for r in rows_from_text(NAME, corpus["marked"])]
    assert words == [w.word for w in corpus["ref"]]
    grid_words = textgrid_words(corpus["grids"] / f"{NAME}.TextGrid")
    assert sum(1 for w in grid_words if w.word in MARKERS) == corpus["n_intervals"]


def _align(corpus: dict, aligner: str, text: str, tag: str) -> dict:
    data = _data_dir(corpus["root"] / f"{tag}_{aligner}", text, corpus["wav"])
    out = data / "align"
    assert align_main(["--data-dir", str(data), "--out-dir", str(out), "--aligner", aligner,
                       "--reference-dir", str(corpus["refs"])]) == 0
    return json.loads((out / "eval.json").read_text())["overall"]


@needs_mfa
def test_aligners_get_the_words_without_markers(corpus: dict) -> None:
    """What an aligner is given from the marked transcript is exactly the plain words (so
    its timings are those without markers: aligners are deterministic in audio + words),
    both through stage 1 (words.tsv -> load_requests) and for a raw request."""
    plain = _data_dir(corpus["root"] / "req_plain", corpus["plain"], corpus["wav"])
    marked = _data_dir(corpus["root"] / "req_marked", corpus["marked"], corpus["wav"])
    (got,), (want,) = load_requests(marked), load_requests(plain)
    assert (got.words, got.wav, got.lang) == (want.words, want.wav, want.lang)
    assert got.words == tuple(w.word for w in corpus["ref"])
    raw = AlignRequest(NAME, tuple(corpus["marked"].split()), str(corpus["wav"]), lang="en")
    req = speech_request(raw)
    assert len(raw.words) - len(req.words) == corpus["n_marks"]
    assert req.words == tuple(w.word for w in corpus["ref"])


@needs_mfa
@pytest.mark.parametrize("aligner", ["dtw", "pocketsphinx"])
def test_audio_aligners_with_markers_match_the_textgrid(corpus: dict, aligner: str) -> None:
    """punct.bin.align on the marked transcript agrees with the TextGrid as well as
    without markers. Measured on this recording without markers: dtw median boundary
    error 30 ms, pause F1 0.80; pocketsphinx 10 ms, F1 0.95."""
    if aligner == "pocketsphinx":
        pytest.importorskip("pocketsphinx")
    report = _align(corpus, aligner, corpus["marked"], "marked")
    assert report["words_aligned"] == report["words"] == len(corpus["ref"])
    assert report["boundary_error_ms"]["median"] <= (40.0 if aligner == "dtw" else 15.0)
    assert report["pauses"]["f1"] >= (0.75 if aligner == "dtw" else 0.9)


@needs_mfa
def test_textgrid_marker_intervals_become_pause(corpus: dict) -> None:
    """The textgrid aligner drops the marker intervals: the words and their times are the
    original TextGrid's, and each marker's duration lies inside the pause around it."""
    data = _data_dir(corpus["root"] / "tg", corpus["marked"], corpus["wav"])
    req = AlignRequest(NAME, tuple(r.word for r in read_word_table(data / "words.tsv")[NAME]),
                       str(corpus["wav"]))
    result = get_aligner("textgrid", source=str(corpus["grids"])).align(req)
    assert result is not None
    assert [(w.word, w.start, w.end) for w in result.words] == \
        [(w.word, w.start, w.end) for w in corpus["ref"]]
    got = pauses(result.words)
    grid_words = textgrid_words(corpus["grids"] / f"{NAME}.TextGrid")
    speech = iter(range(len(got)))
    k = -1
    for w in grid_words:
        if w.word in MARKERS:
            assert k >= 0 and got[k] >= round(w.end - w.start, 3) - 1e-9  # pause holds it
        else:
            k = next(speech)
    assert got == pauses(corpus["ref"])


@needs_mfa
@pytest.mark.parametrize("aligner", ["dtw", "pocketsphinx"])
def test_unintelligible_tokens_are_aligned_as_words(corpus: dict, aligner: str) -> None:
    """``(())`` and ``<unk>`` in place of two words stay words: aligned, with times near
    the TextGrid's times of the words they replace."""
    if aligner == "pocketsphinx":
        pytest.importorskip("pocketsphinx")
    ref = list(corpus["ref"])
    hidden = {5: "(())", 20: "<unk>"}  # in place of "i'm" and "some"
    for k, tok in hidden.items():
        ref[k] = TimedWord(tok, ref[k].start, ref[k].end)
    req = AlignRequest(NAME, tuple(w.word for w in ref), str(corpus["wav"]), lang="en")
    result = get_aligner(aligner).align(req)
    assert result is not None and [w.word for w in result.words] == list(req.words)
    report = evaluate(result.words, ref)
    # measured: dtw median 30 ms, pocketsphinx 10 ms; starts within 70 and 40 ms
    assert report["boundary_error_ms"]["median"] <= (60.0 if aligner == "dtw" else 20.0)
    for k in hidden:
        assert abs(result.words[k].start - ref[k].start) < 0.15
