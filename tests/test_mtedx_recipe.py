"""The mTEDx recipe end to end (stages 0-6) on a Spanish fixture in the mTEDx layout,
synthesised with eSpeak NG: stage 0 downloads ``mtedx_es.tgz`` from a loopback HTTP
server (sha256-checked) and extracts it; stage 1 prepares the mTEDx sets and a UniPunc
JSONL mixed test set (half of its records with audio, as ``<MUSTC1_PATH>`` offsets into
the talk flac files, half ``null``); a tiny UniPunc trains; stage 6 scores the
audio-only, the withheld-share and the JSONL mixed test sets in UniPunc's Tables 2-3.
One system keeps it short: every stage runs Python tools that each pay torch's import."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers.mtedx import build_mtedx

from punct.bin import prepare_mtedx
from punct.bin import write_unipunc_jsonl as write_cli
from punct.kaldi import read_kv
from punct.wordtable import read_word_table

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "egs" / "mtedx" / "punct1" / "conf" / "model" / "tiny"

pytestmark = pytest.mark.slow


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    """(URL, served dir, corpus dir): mtedx_es.tgz of the synthesised corpus on 127.0.0.1."""
    base = tmp_path_factory.mktemp("mtedx_src")
    corpus = base / "corpus"
    build_mtedx(corpus)
    served = base / "served"
    served.mkdir()
    with tarfile.open(served / "mtedx_es.tgz", "w:gz") as tar:
        tar.add(corpus / "es-es", arcname="es-es")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0),
                                functools.partial(QuietHandler, directory=str(served)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", served, corpus
    httpd.shutdown()
    httpd.server_close()


def unipunc_jsonl(corpus: Path, out: Path) -> None:
    """UniPunc JSONL files of the fixture's test split: test-audio (all with audio) and
    test-mixed (every second record without audio)."""
    data = out / "prep"
    assert prepare_mtedx.main(["--data-dir", str(data), "--mtedx-dir", str(corpus)]) == 0
    audio = out / "test-audio.jsonl"
    assert write_cli.main(["--data-dir", str(data / "test"), "--out", str(audio),
                           "--audio-root", f"MUSTC1_PATH={corpus / 'es-es' / 'data'}"]) == 0
    lines = []
    for i, line in enumerate(audio.read_text(encoding="utf-8").splitlines()):
        obj = json.loads(line)
        if i % 2:
            obj.update(audio=None, n_frames=0, speaker_id=None)
        lines.append(json.dumps(obj, ensure_ascii=False))
    (out / "test-mixed.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def recipe(server: tuple[str, Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    url, served, corpus = server
    jsonl = tmp_path_factory.mktemp("unipunc_jsonl")
    unipunc_jsonl(corpus, jsonl)
    recipe = tmp_path_factory.mktemp("mtedx_recipe")
    sha = hashlib.sha256((served / "mtedx_es.tgz").read_bytes()).hexdigest()
    env = dict(os.environ, PUNCT_RECIPE_DIR=str(recipe), MTEDX=str(recipe / "absent"),
               MTEDX_URL=url, MTEDX_SHA256=sha, MTEDX_LANG="es", MUSTC="",
               MUSTC1_PATH=str(corpus / "es-es" / "data"), UNIPUNC_JSONL=str(jsonl),
               OMP_NUM_THREADS="1")
    proc = subprocess.run(
        ["bash", str(ROOT / "utils" / "stage_driver.sh"), "--corpus", "mtedx",
         "--model-conf-dir", str(TINY),
         "--test-sets", "test unipunc_mixed", "--baseline-systems", "",
         "--transformer-systems", "unipunc", "--report-layouts", "unipunc",
         "--num-threads", "1", "--nj", "1"],
        cwd=recipe, env=env, capture_output=True, text=True, timeout=3000,
    )
    if proc.returncode != 0:
        pytest.fail(f"recipe failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n"
                    f"{proc.stderr[-4000:]}")
    (recipe / "run.out").write_text(proc.stdout, encoding="utf-8")
    return recipe


def test_stage0_downloads_checks_and_extracts(recipe: Path) -> None:
    out = (recipe / "run.out").read_text(encoding="utf-8")
    assert "sha256 verified" in out
    assert "MuST-C (UniPunc's English data) is not configured" in out
    db = recipe / "downloads" / "mtedx"
    assert (db / ".extracted_es").is_file() and (db / "lang").read_text() == "es\n"
    assert sorted(p.name for p in (db / "es-es" / "data").iterdir()) == ["test", "train",
                                                                         "valid"]


def test_prepared_sets_and_the_jsonl_mixed_set(recipe: Path) -> None:
    data = recipe / "data"
    for name, utts in (("train", 42), ("dev", 10), ("test", 10), ("unipunc_audio", 10),
                       ("unipunc_mixed", 10)):
        assert len(read_kv(data / name / "text")) == utts, name
    assert "(Aplausos)" not in (data / "test" / "text").read_text(encoding="utf-8")
    mixed = data / "unipunc_mixed"
    withheld = (mixed / "withheld").read_text().split()
    assert len(withheld) == 5 and len(read_kv(mixed / "segments")) == 5
    assert set(read_kv(mixed / "fbank.scp")) == set(read_kv(mixed / "segments"))
    table = read_word_table(mixed / "words.tsv")
    for utt, rows in table.items():
        timed = all(r.start is not None for r in rows)
        assert timed == (utt not in withheld), utt
    # the JSONL set is mixed already: no withheld-share copy of it; test gets one
    assert not (data / "unipunc_mixed_mixed").exists()
    assert len((data / "test_mixed" / "withheld").read_text().split()) == 5


def test_systems_scored_in_unipunc_tables(recipe: Path) -> None:
    for system in ("unipunc",):
        for test_set in ("test", "test_mixed", "unipunc_mixed"):
            doc = json.loads((recipe / "exp" / system / f"decode_{test_set}" / "scores.json")
                             .read_text(encoding="utf-8"))
            assert doc["label_set"] == "iwslt4"
            assert doc["metrics"]["all"]["words"] == 130
    unipunc = json.loads((recipe / "exp/unipunc/decode_test/scores.json").read_text())
    assert unipunc["metrics"]["all"]["micro_f1"] > 0.3
    table2 = (recipe / "results" / "unipunc_table2.md").read_text(encoding="utf-8")
    assert "Paper row" in table2 and "UniPunc-Mix" in table2 and "unipunc_mixed" in table2
    table3 = (recipe / "results" / "unipunc_table3.md").read_text(encoding="utf-8")
    assert "BiLSTM-UniPunc" in table3 and "| ours" in table3
