"""The mTEDx / MuST-C readers, UniPunc JSONL read/write and prepare_mtedx (no training)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile

from punct.bin import prepare_mtedx
from punct.bin import write_unipunc_jsonl as write_cli
from punct.data.audio import AlignRequest, load_requests
from punct.data.mtedx import (
    clean_transcript,
    parse_mustc_yaml_line,
    read_mtedx_split,
    read_mustc_split,
)
from punct.data.unipunc_jsonl import (
    AudioRef,
    parse_audio_ref,
    read_unipunc_jsonl,
    resolve_audio_path,
    utterance_id,
    write_unipunc_jsonl,
)
from punct.errors import MissingDataError, PunctInputError
from punct.kaldi import read_kv, read_segments, validate_data_dir
from punct.score.layouts import unipunc as unipunc_layout
from punct.wordtable import read_word_table

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "mustc_unipunc"
RATE = 16000


def write_wav(path: Path, seconds: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(path, np.zeros(int(seconds * RATE), dtype=np.int16), RATE)
    return path


def jsonl_line(rid: str, audio: str | None, text: str, **extra: object) -> str:
    frames = int(audio.rsplit(":", 1)[1]) if audio else 0
    obj = {"id": rid, "audio": audio, "n_frames": frames, "tgt_text": text,
           "speaker_id": None, "tgt_lang": "en", **extra}
    return json.dumps(obj)


# ----------------------------------------------------------------------------- JSONL

def test_audio_ref_parses_and_keeps_colons_in_the_path() -> None:
    ref = parse_audio_ref("<MUSTC1_PATH>/dev/wav/ted_799.wav:3043200:353920")
    assert ref == AudioRef("<MUSTC1_PATH>/dev/wav/ted_799.wav", 3043200, 353920)
    assert parse_audio_ref("C:/a/b.wav:5:7").path == "C:/a/b.wav"
    assert str(ref) == "<MUSTC1_PATH>/dev/wav/ted_799.wav:3043200:353920"


@pytest.mark.parametrize("value", ["a.wav", "a.wav:1", "a.wav:x:3", "a.wav:1:-3",
                                   ":1:2", "a.wav:1:0"])
def test_bad_audio_refs_name_file_and_line(value: str) -> None:
    with pytest.raises(PunctInputError, match=r"^f\.jsonl:4: audio"):
        parse_audio_ref(value, "f.jsonl", 4)


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "invalid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"id": "a,", "tgt_text": "Hi."}', "missing key.*audio"),
    ('{"id": "a,", "audio": null, "tgt_text": "  "}', "empty or non-string tgt_text"),
    ('{"id": ",", "audio": null, "tgt_text": "Hi."}', "bad id"),
    ('{"id": "a,", "audio": 5, "tgt_text": "Hi."}', "audio must be a string or null"),
    ('{"id": "a,", "audio": "x.wav:0:10", "n_frames": 11, "tgt_text": "Hi."}',
     "n_frames 11 differs"),
    ("", "empty line"),
])
def test_malformed_jsonl_lines_are_errors_naming_the_line(tmp_path: Path, line: str,
                                                          message: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(jsonl_line("ok,", None, "Fine.") + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(PunctInputError, match=rf"t\.jsonl:2: .*{message}"):
        read_unipunc_jsonl(path)


def test_jsonl_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(jsonl_line("ted_1_0,ted_1_1,", "<MUSTC1_PATH>/dev/wav/ted_1.wav:16000:32000",
                               "Hello, world.", speaker_id="spk.1") + "\n"
                    + jsonl_line("x_0001, x_0002,", None, "¿Qué tal?") + "\n",
                    encoding="utf-8")
    records = read_unipunc_jsonl(path)
    assert [utterance_id(r) for r in records] == ["ted_1_0+ted_1_1", "x_0001+x_0002"]
    assert records[0].audio == AudioRef("<MUSTC1_PATH>/dev/wav/ted_1.wav", 16000, 32000)
    assert records[1].audio is None and records[1].line == 2
    out = tmp_path / "out.jsonl"
    assert write_unipunc_jsonl(out, records) == 2
    again = read_unipunc_jsonl(out)
    assert [(r.id, r.audio, r.text, r.speaker) for r in again] == \
        [(r.id, r.audio, r.text, r.speaker) for r in records]
    assert "¿Qué tal?" in out.read_text(encoding="utf-8")


def test_placeholder_resolution() -> None:
    ref = AudioRef("<MUSTC1_PATH>/dev/wav/ted_1.wav", 0, 1)
    assert resolve_audio_path(ref, {"MUSTC1_PATH": "/c/en-de/data"}) == \
        Path("/c/en-de/data/dev/wav/ted_1.wav")
    with pytest.raises(MissingDataError, match=r"f:3: .*no directory given for <MUSTC1_PATH>"):
        resolve_audio_path(ref, {}, "f", 3)
    assert resolve_audio_path(AudioRef("/a/b.wav", 0, 1), {}) == Path("/a/b.wav")


# ----------------------------------------------------------------------------- UniPunc's files

@pytest.mark.skipif(not SHARED.is_dir(), reason="shared UniPunc JSONL files not present")
def test_unipunc_test_files_without_their_audio(tmp_path: Path) -> None:
    """The shared copy has no audio: --missing-audio text keeps every record text-only
    and counts them; the default stops at the first record, naming it."""
    audio_recs = read_unipunc_jsonl(SHARED / "test-audio.jsonl")
    mixed_recs = read_unipunc_jsonl(SHARED / "test-mixed.jsonl")
    assert (len(audio_recs), len(mixed_recs)) == (490, 2298)  # SOURCE.md
    with_audio = {r.id for r in mixed_recs if r.audio is not None}
    assert with_audio == {r.id for r in audio_recs}  # English-Audio is inside English-Mixed
    assert all(r.audio.path.startswith("<MUSTC1_PATH>/dev/wav/ted_") for r in audio_recs
               if r.audio is not None)
    # prepared: the first 400 lines of test-mixed.jsonl (the whole file takes a minute on
    # a loaded 2-core machine; all of it gives 2,295 utterances, 120,169 words)
    head = tmp_path / "head.jsonl"
    lines = (SHARED / "test-mixed.jsonl").read_text(encoding="utf-8").split("\n")
    head.write_text("\n".join(lines[:400]) + "\n", encoding="utf-8")
    data = tmp_path / "data"
    rc = prepare_mtedx.main(["--data-dir", str(data), "--missing-audio", "text",
                             "--jsonl", f"unipunc_mixed={head}"])
    assert rc == 0
    mixed = data / "unipunc_mixed"
    info = json.loads((mixed / "prep.json").read_text(encoding="utf-8"))
    assert (info["utterances"], info["words"]) == (400, 21243)
    assert (info["audio_missing"], info["audio_null"], info["with_audio"]) == (88, 312, 0)
    assert not (mixed / "wav.scp").exists()
    assert validate_data_dir(mixed)["utterances"] == 400
    table = read_word_table(mixed / "words.tsv")
    assert "ted_799_24+ted_799_25+ted_799_26+ted_799_27+ted_799_28" in table
    assert all(r.start is None for rows in table.values() for r in rows)
    # without --missing-audio text the first record stops the preparation, named
    one = tmp_path / "one.jsonl"
    one.write_text((SHARED / "test-audio.jsonl").read_text(encoding="utf-8").split("\n")[0]
                   + "\n", encoding="utf-8")
    rc = prepare_mtedx.main(["--data-dir", str(tmp_path / "strict"), "--jsonl", f"a={one}"])
    assert rc == 2
    with pytest.raises(MissingDataError, match=r"one\.jsonl:1: .*no directory given for "
                       "<MUSTC1_PATH>"):
        prepare_mtedx.jsonl_set(one, {}, "error", "en")


def test_jsonl_set_with_audio_and_mixed_records(tmp_path: Path) -> None:
    root = tmp_path / "mustc" / "data"
    write_wav(root / "dev" / "wav" / "ted_5.wav", 3.0)
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join([
        jsonl_line("ted_5_0,ted_5_1,", "<MUSTC1_PATH>/dev/wav/ted_5.wav:8000:16000",
                   "So, what now?", speaker_id="spk.5"),
        jsonl_line("yt_0001,", None, "(Laughter) Nothing happened."),
        jsonl_line("ted_5_2,", "<MUSTC1_PATH>/dev/wav/ted_5.wav:32000:8000", "Fine."),
    ]) + "\n", encoding="utf-8")
    data = tmp_path / "data"
    assert prepare_mtedx.main(["--data-dir", str(data), "--jsonl", f"mix={path}",
                               "--audio-root", f"MUSTC1_PATH={root}"]) == 0
    mix = data / "mix"
    segs = read_segments(mix / "segments")
    assert segs["ted_5_0+ted_5_1"][1:3] == (0.5, 1.5)
    assert segs["ted_5_2"][1:3] == (2.0, 2.5)
    assert (mix / "withheld").read_text() == "yt_0001\n"
    assert read_kv(mix / "text")["yt_0001"] == "Nothing happened."
    assert read_kv(mix / "utt2spk")["ted_5_0+ted_5_1"] == "spk.5"
    # written back: the same audio references (relative to the root placeholder)
    out = tmp_path / "back.jsonl"
    assert write_cli.main(["--data-dir", str(mix), "--out", str(out),
                                     "--audio-root", f"MUSTC1_PATH={root}"]) == 0
    back = {r.id: r for r in read_unipunc_jsonl(out)}
    assert str(back["ted_5_0,ted_5_1,"].audio) == "<MUSTC1_PATH>/dev/wav/ted_5.wav:8000:16000"
    assert str(back["ted_5_2,"].audio) == "<MUSTC1_PATH>/dev/wav/ted_5.wav:32000:8000"
    assert back["yt_0001,"].audio is None
    # a missing audio file: an error naming the JSONL line, or text-only on request
    (root / "dev" / "wav" / "ted_5.wav").unlink()
    with pytest.raises(MissingDataError, match=r"m\.jsonl:1: .*ted_5\.wav not found"):
        prepare_mtedx.jsonl_set(path, {"MUSTC1_PATH": str(root)}, "error", "en")
    ds = prepare_mtedx.jsonl_set(path, {"MUSTC1_PATH": str(root)}, "text", "en")
    assert ds.info["audio_missing"] == 2 and not ds.segments


def test_partial_audio_needs_withheld(tmp_path: Path) -> None:
    root = tmp_path / "mustc" / "data"
    write_wav(root / "dev" / "wav" / "ted_5.wav", 1.0)
    path = tmp_path / "m.jsonl"
    path.write_text(jsonl_line("a,", "<MUSTC1_PATH>/dev/wav/ted_5.wav:0:8000", "One.") + "\n"
                    + jsonl_line("b,", None, "Two.") + "\n", encoding="utf-8")
    data = tmp_path / "data"
    assert prepare_mtedx.main(["--data-dir", str(data), "--jsonl", f"s={path}",
                               "--audio-root", f"MUSTC1_PATH={root}"]) == 0
    (data / "s" / "withheld").unlink()
    with pytest.raises(PunctInputError, match="utterances without audio belong in withheld"):
        validate_data_dir(data / "s")


# ----------------------------------------------------------------------------- mTEDx

def mtedx_tree(root: Path, segments: str, transcript: str) -> Path:
    base = root / "es-es" / "data" / "test"
    (base / "txt").mkdir(parents=True)
    (base / "txt" / "segments").write_text(segments, encoding="utf-8")
    (base / "txt" / "test.es").write_text(transcript, encoding="utf-8")
    write_wav(base / "wav" / "talkA.flac", 4.0)
    return base


def test_mtedx_split_and_sound_events(tmp_path: Path) -> None:
    mtedx_tree(tmp_path, "talkA_0000 talkA 0.5 1.5\ntalkA_0001 talkA 2.0 3.5\n",
               "Hola, ¿qué tal?\nMuy bien, gracias. (Aplausos)\n")
    segs = read_mtedx_split(tmp_path, "es", "test")
    assert [(s.utt_id, s.talk, s.start, s.end, s.line) for s in segs] == \
        [("talkA_0000", "talkA", 0.5, 1.5, 1), ("talkA_0001", "talkA", 2.0, 3.5, 2)]
    assert clean_transcript(segs[1].text) == "Muy bien, gracias."
    assert clean_transcript("(Risas) (Aplausos)") == ""
    # the language folder itself may be given
    assert len(read_mtedx_split(tmp_path / "es-es", "es", "test")) == 2
    data = tmp_path / "data"
    ds = prepare_mtedx.segments_set(segs, "es")
    prepare_mtedx.write_set(data, "test", ds)
    assert read_kv(data / "test" / "segments") == {"talkA_0000": "talkA 0.500000 1.500000",
                                                    "talkA_0001": "talkA 2.000000 3.500000"}
    assert read_kv(data / "test" / "wav.scp")["talkA"].endswith("talkA.flac")
    assert read_kv(data / "test" / "utt2lang") == {"talkA_0000": "es", "talkA_0001": "es"}


def test_talk_flac_segments_read_by_seeking(tmp_path: Path) -> None:
    """An utterance of a talk-level flac reads exactly the samples of its segment."""
    noise = np.random.default_rng(3).integers(-2000, 2000, 3 * RATE).astype(np.int16)
    flac = tmp_path / "talk.flac"
    soundfile.write(flac, noise, RATE, format="FLAC")
    whole, _ = soundfile.read(flac, dtype="float32")
    req = AlignRequest("u1", ("hola",), str(flac), "talk", 0.5, 1.25, "wav.scp", 4)
    samples, rate = req.load_audio()
    assert rate == RATE and np.array_equal(samples, whole[8000:20000])
    to_end = AlignRequest("u2", ("x",), str(flac), "talk", 2.5, -1.0)
    assert np.array_equal(to_end.load_audio()[0], whole[40000:])
    bad = AlignRequest("u3", ("x",), str(flac), "talk", 3.5, 4.0, "wav.scp", 4)
    with pytest.raises(PunctInputError, match=r"wav\.scp:4: utterance u3: segment 3\.500"):
        bad.load_audio()


def test_prepared_mtedx_set_loads_its_segments(tmp_path: Path) -> None:
    base = mtedx_tree(tmp_path, "talkA_0000 talkA 0.5 1.5\ntalkA_0001 talkA 2.0 3.5\n",
                      "Hola.\nAdiós.\n")
    data = tmp_path / "data"
    prepare_mtedx.write_set(data, "test", prepare_mtedx.segments_set(
        read_mtedx_split(tmp_path, "es", "test"), "es"))
    reqs = load_requests(data / "test")
    assert [(r.utt_id, r.recording, r.words, r.lang) for r in reqs] == [
        ("talkA_0000", "talkA", ("hola",), "es"), ("talkA_0001", "talkA", ("adiós",), "es")]
    assert len(reqs[1].load_audio()[0]) == 24000
    assert reqs[0].wav == str((base / "wav" / "talkA.flac").resolve())


@pytest.mark.parametrize(("segments", "transcript", "match"), [
    ("a_0 talkA 0.5 1.5\nb_1 talkA 2.0\n", "x\ny\n", r"segments:2: expected"),
    ("a_0 talkA 0.5 1.5\nb_1 talkA 2.0 x\n", "x\ny\n", r"segments:2: non-numeric"),
    ("a_0 talkA 1.5 0.5\n", "x\n", r"segments:1: bad segment times"),
    ("a_0 talkA 0.5 1.5\na_0 talkA 2.0 3.0\n", "x\ny\n", r"segments:2: duplicate key"),
    ("a_0 talkA 0.5 1.5\nb_1 talkA 2.0 3.0\n", "x\n", r"test\.es:2: 1 transcript lines for 2"),
    ("a_0 talkA 0.5 1.5\nb_1 talkA 2.0 3.0\n", "x\n\n", r"test\.es:2: empty transcript"),
    ("a_0 talkA 0.5 -1\n", "x\n", r"segments:1: segment a_0: open end"),
])
def test_malformed_mtedx_files(tmp_path: Path, segments: str, transcript: str,
                               match: str) -> None:
    mtedx_tree(tmp_path, segments, transcript)
    with pytest.raises(PunctInputError, match=match):
        read_mtedx_split(tmp_path, "es", "test")


def test_missing_talk_audio_names_the_segment(tmp_path: Path) -> None:
    mtedx_tree(tmp_path, "talkB_0000 talkB 0.5 1.5\n", "Hola.\n")
    segs = read_mtedx_split(tmp_path, "es", "test")
    with pytest.raises(MissingDataError, match=r"test\.es:1: segment talkB_0000: audio file"):
        prepare_mtedx.segments_set(segs, "es")
    with pytest.raises(MissingDataError, match=r"MTEDX in conf/db\.sh"):
        read_mtedx_split(tmp_path, "es", "train")


# ----------------------------------------------------------------------------- MuST-C

def test_mustc_split_ids_count_within_each_talk(tmp_path: Path) -> None:
    base = tmp_path / "en-de" / "data" / "dev"
    (base / "txt").mkdir(parents=True)
    write_wav(base / "wav" / "ted_1.wav", 5.0)
    write_wav(base / "wav" / "ted_2.wav", 5.0)
    (base / "txt" / "dev.yaml").write_text(
        "- {duration: 1.5, offset: 0.25, rW: 3, uW: 0, speaker_id: spk.1, wav: ted_1.wav}\n"
        "- {duration: 2.0, offset: 2.0, rW: 3, uW: 0, speaker_id: spk.1, wav: ted_1.wav}\n"
        "- {duration: 1.0, offset: 1.0, rW: 2, uW: 0, speaker_id: spk.2, wav: ted_2.wav}\n",
        encoding="utf-8")
    (base / "txt" / "dev.en").write_text("Hi there.\nHow are you?\n(Applause) Thanks.\n",
                                         encoding="utf-8")
    segs = read_mustc_split(tmp_path / "en-de", "dev")
    assert [(s.utt_id, s.start, s.end, s.speaker) for s in segs] == [
        ("ted_1_0", 0.25, 1.75, "spk.1"), ("ted_1_1", 2.0, 4.0, "spk.1"),
        ("ted_2_0", 1.0, 2.0, "spk.2")]
    ds = prepare_mtedx.segments_set(segs, "en")
    assert ds.rows["ted_2_0"][0].form == "Thanks"


@pytest.mark.parametrize(("line", "match"), [
    ("{duration: 1.0, offset: 0, wav: a.wav}", "expected '- {duration"),
    ("- {duration: 1.0, offset: 0}", "missing key.*wav"),
    ("- {duration: -1, offset: 0, wav: a.wav}", "duration must be a non-negative number"),
    ("- {duration: 1.0, offset: x, wav: a.wav}", "offset must be a non-negative number"),
    ("- {duration: 0, offset: 1, wav: a.wav}", "duration 0"),
    ("- {duration: 1.0, offset: 0, wav: a.wav", "invalid YAML"),
    ("- [1, 2]", "expected a mapping"),
])
def test_malformed_mustc_yaml_lines(line: str, match: str) -> None:
    with pytest.raises(PunctInputError, match=rf"^dev\.yaml:7: {match}"):
        parse_mustc_yaml_line(line, Path("dev.yaml"), 7)


def test_prepare_needs_a_source(tmp_path: Path) -> None:
    assert prepare_mtedx.main(["--data-dir", str(tmp_path)]) == 1
    assert prepare_mtedx.main(["--data-dir", str(tmp_path), "--jsonl", "noequals"]) == 1


# ----------------------------------------------------------------------------- layout

def test_unipunc_layout_names_the_paper_row_of_our_systems() -> None:
    def score(system: str, test_set: str) -> dict:
        classes = {"COMMA": {"tp": 3, "fp": 1, "fn": 3}, "PERIOD": {"tp": 1, "fp": 0, "fn": 0}}
        return {"system": system, "test_set": test_set, "corpus": "mtedx",
                "label_set": "iwslt4",
                "metrics": {"all": {"micro_f1": 0.5, "punct": {"classes": classes}}}}

    t2, t3, _ = unipunc_layout.build_tables([score("unipunc", "test"), score("brnn_text", "test"),
                                     score("unipunc_brnn", "unipunc_mixed")])
    ours = t2.frame[t2.frame["Source"] == "ours"].set_index("System")
    assert ours.loc["unipunc", "Paper row"] == "UniPunc-Mix"
    assert ours.loc["brnn_text", "Paper row"] == "BiLSTM"
    assert ours.loc["unipunc_brnn", "Test"] == "Mixed"
    assert ours.loc["unipunc", "Overall F1"] == pytest.approx(2 * 0.8 * 4 / 7 / (0.8 + 4 / 7)
                                                            * 100)
    t3_ours = t3.frame[t3.frame["Source"] == "ours"]
    assert t3_ours[["System", "Paper row"]].values.tolist() == [["unipunc_brnn",
                                                                  "BiLSTM-UniPunc"]]
    pub = t3.frame[t3.frame["Source"] != "ours"]
    assert (pub["System"] == pub["Paper row"]).all()
