"""Optional dependencies: ``punct.extras.require`` and the one-line errors naming the extra
(the wheel-alone run of the commands is tests/test_wheel.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers.tiny import tiny_brnn_exp

from punct import __main__ as punct_main
from punct.bin import export as export_cli
from punct.errors import MissingDataError, report_error
from punct.extras import MissingExtraError, require


def test_require_returns_the_module() -> None:
    assert require("json", "align", "testing").dumps([1]) == "[1]"


def test_missing_extra_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "soundfile", None)  # import fails: not installed
    with pytest.raises(MissingExtraError) as err:
        require("soundfile", "align", "reading audio")
    assert isinstance(err.value, MissingDataError)
    assert str(err.value) == ("reading audio needs 'soundfile', which is not installed: "
                              "pip install 'punct-recipes[align]'")
    assert report_error("align", err.value) == 2
    with pytest.raises(MissingExtraError, match=r"\./setup\.sh --with-espnet"):
        require("soundfile", "espnet", "ESPnet ASR")


def test_export_onnx_without_the_extra_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    exp = tiny_brnn_exp(tmp_path / "exp")
    monkeypatch.setitem(sys.modules, "onnx", None)
    out = tmp_path / "model"
    assert export_cli.main(["--exp-dir", str(exp), "--out", str(out), "--onnx"]) == 2
    err = capsys.readouterr().err
    assert err == ("export: punct-export --onnx needs 'onnx', which is not installed: "
                   "pip install 'punct-recipes[onnx]'\n")
    assert not out.exists()


def test_dispatcher_reports_a_tool_of_a_missing_extra(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    for name in [m for m in sys.modules if m.startswith(("punct.score", "punct.bin.report"))]:
        monkeypatch.delitem(sys.modules, name)
    assert punct_main.main(["report", "--help"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'punct-recipes[report]'" in err
