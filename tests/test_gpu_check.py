"""local/iwslt2012/gpu_check.sh and gpu_compile_check.sh refuse bad arguments before they
write anything (they run without ``set -e``, so a failed folder would otherwise become
``/``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "local" / "iwslt2012" / "gpu_check.sh"
COMPILE_SCRIPT = REPO / "local" / "iwslt2012" / "gpu_compile_check.sh"


def run(*args: str, script: Path = SCRIPT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(script), *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_usage_without_arguments() -> None:
    for args in ((), ("--bundle", "x"), ("only-out",)):
        done = run(*args)
        assert done.returncode == 1, args
        assert "Usage:" in done.stderr


def test_missing_bundle_or_che_dir_stops_before_any_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run("--bundle", str(tmp_path / "no_bundle"), str(out))
    assert done.returncode == 1
    assert not out.exists()
    done = run(str(out), str(tmp_path / "no_che"))
    assert done.returncode == 1
    assert not (out / "device.txt").exists()


def test_compile_check_usage_and_missing_bundle(tmp_path: Path) -> None:
    for args in ((), ("--bundle", "x")):
        done = run(*args, script=COMPILE_SCRIPT)
        assert done.returncode == 1, args
        assert "Usage:" in done.stderr
    out = tmp_path / "out"
    done = run("--bundle", str(tmp_path / "no_bundle"), str(out), script=COMPILE_SCRIPT)
    assert done.returncode == 1
    assert not out.exists()
