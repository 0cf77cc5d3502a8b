"""Backends for the hardware: torch int8 against fp32 on a tiny model, the backend record
(``backends.json``) written by ``punct-export --check-backends`` and read by ``auto``,
what ``auto`` picks on each kind of machine, and bad backend names."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.tiny import MARKS, VOCAB, save_untrained, seq
from helpers.tinybert import build_tiny_bert

from punct import Restorer
from punct.bin import bench_backends, decode
from punct.bin import export as export_cli
from punct.bin import restore as restore_cli
from punct.engine.decode import predict_words
from punct.engine.heap import heap_state
from punct.engine.int8 import int8_layers, quantize_int8
from punct.engine.precision import NATIVE_BF16_ENV
from punct.export import backends
from punct.export.backends import (
    F1_TOLERANCE,
    KERNEL_LIMITS,
    RECORD_FILE,
    choose_backend,
    cpu_kind,
    read_record,
)
from punct.export.measure import check_names, measure_backends
from punct.export.system import load_system
from punct.wordtable import WordRow, write_word_table

WORDS = [*VOCAB, "stop", "huh"]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(experiment dir, dev data dir) of an untrained tiny Nagy system over a tiny BERT."""
    root = tmp_path_factory.mktemp("backends")
    bert = build_tiny_bert(root / "bert", words=VOCAB, hidden=64, layers=2)
    exp = root / "exp"
    exp.mkdir()
    save_untrained({"family": "nagy", "label_set": "iwslt4", "featurizer": {"encoder": str(bert)},
                    "model": {"hidden": 48, "dropout": 0.0},
                    "decode": {"window": 16, "stride": 8, "bf16": "auto"}},
                   exp, seed=3, train_seqs=[seq(WORDS)])
    rng = np.random.default_rng(0)
    table = {}
    for u in range(6):
        words = [str(w) for w in rng.choice(WORDS, size=40)]
        table[f"u{u}"] = [WordRow(f"u{u}", i, w, w, MARKS.get(w, ()), "O")
                          for i, w in enumerate(words)]
    dev = root / "dev"
    dev.mkdir()
    write_word_table(dev / "words.tsv", table)
    return exp, dev


@pytest.fixture()
def exported(tiny: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
             ) -> Path:
    """An export of the tiny system with its backends checked on the dev dir, as on a CPU
    with native bf16 (the check measures torch bf16 too)."""
    monkeypatch.setenv(NATIVE_BF16_ENV, "1")
    exp, dev = tiny
    out = tmp_path / "out"
    argv = ["--exp-dir", str(exp), "--out", str(out), "--check-backends", "--dev-dir", str(dev),
            "--num-threads", "1"]
    assert export_cli.main(argv) == 0
    return out


@pytest.fixture(autouse=True)
def fresh_notices() -> None:
    backends.say_once.cache_clear()


@pytest.fixture(autouse=True)
def no_kernel_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel libraries' limits of the suite's environment (a run held to AVX2) are
    left out of what the records and reports name; the tests set their own."""
    for name in KERNEL_LIMITS:
        if name != NATIVE_BF16_ENV:
            monkeypatch.delenv(name, raising=False)


def test_int8_decisions_stay_close_to_fp32(tiny: tuple[Path, Path]) -> None:
    exp, _ = tiny
    system = load_system(exp)
    int8 = quantize_int8(system.model)
    quantized = [m for m in int8.modules() if isinstance(m, torch.ao.nn.quantized.dynamic.Linear)]
    assert len(quantized) == len(int8_layers(system.model)) > 10  # every Linear layer
    assert all(isinstance(p, torch.nn.Parameter) and p.dtype == torch.float32
               for p in system.model.parameters())  # the fp32 model is left as it was
    rng = np.random.default_rng(1)
    seqs, offset = [], 0
    for _ in range(5):
        s = seq([str(w) for w in rng.choice(WORDS, size=30)], offset)
        seqs.append(s)
        offset += len(s)
    fp32 = predict_words(system.model, system.featurizer, seqs, 16, 8)
    q = predict_words(int8, system.featurizer, seqs, 16, 8)
    assert fp32.punct.std() > 1e-3  # the output depends on the input
    assert np.abs(fp32.punct - q.punct).max() < 0.05
    assert (fp32.punct.argmax(1) != q.punct.argmax(1)).mean() <= 0.05


def test_check_writes_the_record_and_f1_decides(exported: Path, tiny: tuple[Path, Path]
                                                ) -> None:
    record = json.loads((exported / RECORD_FILE).read_text(encoding="utf-8"))
    rows = {r["backend"]: r for r in record["backends"]}
    assert record["backends"][0]["backend"] == "torch-fp32" and "torch-int8" in rows
    assert "torch-bf16" in rows  # measured where bf16 is native (the fixture's CPU)
    here = cpu_kind()
    assert (record["cpu"], record["cpu_flags"]) == (here["cpu"], here["cpu_flags"])
    assert record["kernel_limits"] == {NATIVE_BF16_ENV: "1"}
    assert record["words"] == 240 and record["dev_dir"] == str(tiny[1])
    assert record["weights"]["file"] == "model.safetensors"
    fp32, int8 = rows["torch-fp32"], rows["torch-int8"]
    assert 0.0 <= int8["micro_f1"] <= 100.0 and int8["decisions_differ"] <= 0.05
    assert ("torch-int8" in record["within_tolerance"]) == (
        fp32["micro_f1"] - int8["micro_f1"] <= F1_TOLERANCE)
    assert read_record(load_system(exported)) == record
    # a record for other weights is not read
    system = load_system(exported)
    (exported / "model.safetensors").write_bytes(b"other weights")
    assert read_record(system) is None


def _rewrite(path: Path, speeds: dict[str, float], f1: dict[str, float]) -> None:
    """Set the recorded words/s and micro-F1 of some backends."""
    record = json.loads((path / RECORD_FILE).read_text(encoding="utf-8"))
    for row in record["backends"]:
        row["words_per_s"] = speeds.get(row["backend"], row["words_per_s"])
        row["micro_f1"] = f1.get(row["backend"], row["micro_f1"])
    (path / RECORD_FILE).write_text(json.dumps(record), encoding="utf-8")


def test_auto_picks_int8_only_where_the_record_allows(exported: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    monkeypatch.setenv(NATIVE_BF16_ENV, "0")  # a CPU without native bf16
    _rewrite(exported, {"torch-fp32": 100.0, "torch-int8": 180.0}, {"torch-fp32": 60.0,
                                                                    "torch-int8": 59.6})
    r = Restorer.from_pretrained(exported, device="cpu")
    assert r.backend == "torch-int8" and r.settings.bf16 is False
    assert isinstance(r.engine.model.head[1], torch.ao.nn.quantized.dynamic.Linear)
    assert len(r.restore("the yes stop and we go huh").split()) == 7
    # explicit choices are obeyed
    assert Restorer.from_pretrained(exported, device="cpu", precision="fp32").backend == "torch"
    assert Restorer.from_pretrained(exported, device="cpu", backend="torch").backend == "torch"
    # int8 more than 0.5 micro-F1 below fp32, or slower: fp32
    _rewrite(exported, {}, {"torch-int8": 59.4})
    assert Restorer.from_pretrained(exported, device="cpu").backend == "torch"
    _rewrite(exported, {"torch-int8": 90.0}, {"torch-int8": 60.0})
    assert Restorer.from_pretrained(exported, device="cpu").backend == "torch"
    # the fastest usable one: onnx-int8 recorded faster, but there is no model.int8.onnx
    record = json.loads((exported / RECORD_FILE).read_text(encoding="utf-8"))
    record["backends"].append({**record["backends"][1], "backend": "onnx-int8",
                               "words_per_s": 500.0})
    (exported / RECORD_FILE).write_text(json.dumps(record), encoding="utf-8")
    _rewrite(exported, {"torch-int8": 150.0}, {})
    assert Restorer.from_pretrained(exported, device="cpu").backend == "torch-int8"
    assert capsys.readouterr().err == ""  # a record: nothing to say


def test_auto_without_a_record_stays_fp32_and_says_so_once(exported: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    monkeypatch.setenv(NATIVE_BF16_ENV, "0")
    (exported / RECORD_FILE).unlink()
    for _ in range(2):
        r = Restorer.from_pretrained(exported, device="cpu")
        assert r.backend == "torch" and r.settings.bf16 is False
    err = capsys.readouterr().err
    assert err.count("backend auto: fp32 (safe)") == 1 and "--check-backends" in err


def test_auto_picks_bf16_where_native(exported: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # even where the record, made on this CPU, has int8 faster than bf16 (as on an AMD
    # EPYC of the Zen 4 generation, docs/RESTORE.md): bf16 keeps fp32's F1
    _rewrite(exported, {"torch-fp32": 100.0, "torch-bf16": 250.0, "torch-int8": 300.0},
             {"torch-fp32": 60.0, "torch-int8": 60.0})
    monkeypatch.setenv(NATIVE_BF16_ENV, "1")  # AVX512-BF16/AMX
    r = Restorer.from_pretrained(exported, device="cpu")
    assert r.backend == "torch" and r.settings.bf16 is True
    # a system whose config turns bf16 off keeps fp32 torch where bf16 is native
    system = load_system(exported)
    system.config = system.config.replace(
        decode=dataclasses.replace(system.config.decode, bf16="off"))
    assert choose_backend(system, "cpu", "off").backend == "torch"
    monkeypatch.delenv(NATIVE_BF16_ENV)
    monkeypatch.setattr("punct.engine.precision.cpu_flags", lambda *a: {"avx2", "amx_bf16"})
    assert Restorer.from_pretrained(exported, device="cpu").settings.bf16 is True
    monkeypatch.setattr("punct.engine.precision.cpu_flags", lambda *a: {"avx2", "avx512f"})
    assert Restorer.from_pretrained(exported, device="cpu").backend == "torch-int8"
    system = load_system(exported)
    assert choose_backend(system, "cuda", "auto").backend == "torch"  # GPUs: torch
    assert choose_backend(system, "cpu", "on", explicit_precision=True).backend == "torch"


def test_the_check_measures_bf16_only_where_native(tiny: tuple[Path, Path],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    system = load_system(tiny[0])
    monkeypatch.setenv(NATIVE_BF16_ENV, "0")
    assert check_names(system)[:2] == ["torch-fp32", "torch-int8"]
    monkeypatch.setenv(NATIVE_BF16_ENV, "1")
    assert check_names(system)[:3] == ["torch-fp32", "torch-bf16", "torch-int8"]
    monkeypatch.setattr("punct.export.backends.cpu_flags", lambda *a: {"avx2", "avx512_bf16"})
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert cpu_kind()["cpu_flags"] == ["avx2", "avx512_bf16"]
    assert cpu_kind()["kernel_limits"] == {NATIVE_BF16_ENV: "1", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def test_bad_backend_names_are_refused(tiny: tuple[Path, Path],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    exp, _ = tiny
    with pytest.raises(ValueError, match=r"unknown backend 'int4' \(known: auto, torch, "
                                         r"torch-int8, onnx, onnx-int8\)"):
        Restorer.from_pretrained(exp, device="cpu", backend="int4")
    with pytest.raises(SystemExit):
        restore_cli.main(["--model", str(exp), "--backend", "int4"])
    assert "invalid choice: 'int4'" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"unknown backend 'torch-int4'"):
        measure_backends(load_system(exp), tiny[1], ["torch-fp32", "torch-int4"])
    with pytest.raises(SystemExit):  # --check-backends needs --dev-dir
        export_cli.main(["--exp-dir", str(exp), "--out", "x", "--check-backends"])


def test_bench_reports_the_cpu_and_torch_int8(tiny: tuple[Path, Path], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    exp, dev = tiny
    out = tmp_path / "bench.json"
    argv = ["--model", str(exp), "--data-dir", str(dev), "--backends", "torch-fp32,torch-int8",
            "--num-threads", "1", "-o", str(out)]
    assert bench_backends.main(argv) == 0
    text = capsys.readouterr().out
    assert text.startswith("cpu: ") and "| torch-int8 |" in text
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["cpu"] and isinstance(doc["cpu_flags"], list)
    assert [r["backend"] for r in doc["backends"]] == ["torch-fp32", "torch-int8"]
    assert doc["backends"][1]["decisions_differ"] <= 0.05
    assert doc["int8_engine"] == torch.backends.quantized.engine
    # the command set the allocator up (punct.engine.heap) and says how
    assert doc["heap"] == heap_state() != "default"


@pytest.mark.skipif("onednn" not in torch.backends.quantized.supported_engines,
                    reason="torch built without oneDNN's int8 kernels")
def test_bench_int8_on_onednn_held_to_avx2(tiny: tuple[Path, Path], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``--int8-engine onednn`` quantises for oneDNN's kernels, the report names the engine
    and the kernel limits in force, and the process's engine is given back."""
    exp, dev = tiny
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    before = torch.backends.quantized.engine
    out = tmp_path / "bench.json"
    argv = ["--model", str(exp), "--data-dir", str(dev), "--backends", "torch-fp32,torch-int8",
            "--num-threads", "1", "--int8-engine", "onednn", "-o", str(out)]
    assert bench_backends.main(argv) == 0
    assert "int8 engine onednn; kernel limits: ONEDNN_MAX_CPU_ISA=AVX2" in capsys.readouterr().out
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["int8_engine"] == "onednn"
    assert doc["kernel_limits"]["ONEDNN_MAX_CPU_ISA"] == "AVX2"
    int8 = doc["backends"][1]
    assert int8["backend"] == "torch-int8" and 0 < int8["max_abs_diff"] < 0.5
    assert int8["decisions_differ"] <= 0.05
    assert torch.backends.quantized.engine == before


def test_bench_cpu_kinds_script(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    """utils/bench_cpu_kinds.sh holds every kernel library to AVX2 for the ``avx2`` kind
    (fbgemm too) and writes one record per kind, engine and round; an unknown kind is
    refused before anything runs."""
    exp, dev = tiny
    script = ROOT / "utils" / "bench_cpu_kinds.sh"
    env = {**os.environ, "KINDS": "avx2", "ENGINES": "x86"}
    done = subprocess.run([str(script), str(exp), str(dev), str(tmp_path / "out"), "1"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["avx2_x86_1.json"]
    doc = json.loads((tmp_path / "out" / "avx2_x86_1.json").read_text(encoding="utf-8"))
    assert doc["kernel_limits"] == {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                                    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
                                    "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2",
                                    "PUNCT_NATIVE_BF16": "0"}
    assert doc["int8_engine"] == "x86" and doc["threads"] == 1
    assert [r["backend"] for r in doc["backends"]] == ["torch-fp32", "torch-int8"]
    bad = subprocess.run([str(script), str(exp), str(dev), str(tmp_path / "bad")],
                         env={**env, "KINDS": "avx2 zen5"}, capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 1 and "unknown CPU kind 'zen5'" in bad.stderr
    assert not (tmp_path / "bad").exists()


def test_decode_runs_torch_int8(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    exp, dev = tiny
    out = tmp_path / "decode"
    argv = ["--exp-dir", str(exp), "--data-dir", str(dev), "--out-dir", str(out),
            "--num-threads", "1", "--quiet"]
    assert decode.main([*argv, "--backend", "torch-int8"]) == 0
    info = json.loads((out / "decode.json").read_text(encoding="utf-8"))
    assert info["backend"] == "torch-int8" and info["bf16"] is False and info["words"] == 240
