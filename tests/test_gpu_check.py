"""local/iwslt2012/gpu_check.sh and gpu_compile_check.sh refuse bad arguments before they
write anything (they run without ``set -e``, so a failed folder would otherwise become
``/``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "local" / "iwslt2012" / "gpu_check.sh"
COMPILE_SCRIPT = REPO / "local" / "iwslt2012" / "gpu_compile_check.sh"
DECODE_SCRIPT = REPO / "local" / "iwslt2012" / "gpu_decode_check.sh"


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


def test_compile_and_decode_check_usage_and_missing_bundle(tmp_path: Path) -> None:
    for script in (COMPILE_SCRIPT, DECODE_SCRIPT):
        for args in ((), ("--bundle", "x")):
            done = run(*args, script=script)
            assert done.returncode == 1, (script, args)
            assert "Usage:" in done.stderr
        out = tmp_path / "out"
        done = run("--bundle", str(tmp_path / "no_bundle"), str(out), script=script)
        assert done.returncode == 1
        assert not out.exists()


def test_gpu_unpack_makes_a_bundle_usable(tmp_path: Path) -> None:
    """What gpu_bundle.sh packs, gpu_lib.sh's gpu_unpack unpacks: the float16 encoder back
    to float32 (PUNCT_ENCODER_DIR), and the prepared sets with their hidden done markers
    into the recipe, through Python's tarfile (no xz program needed)."""
    import os
    import shutil
    import sys
    import tarfile

    from helpers.tinybert import build_tiny_bert

    from punct.bin import pack_encoder

    bundle, recipe, tmp = tmp_path / "bundle", tmp_path / "recipe", tmp_path / "tmp"
    for folder in (bundle, recipe, tmp):
        folder.mkdir()
    assert pack_encoder.main(["--src", str(build_tiny_bert(tmp_path / "enc")),
                              "--out", str(bundle / "encoder")]) == 0
    prepared = tmp_path / "prepared"
    (prepared / "data" / "train").mkdir(parents=True)
    (prepared / "data" / "train" / "words.tsv").write_text("the words\n", encoding="utf-8")
    (prepared / ".stages").mkdir()
    (prepared / ".stages" / "1.done").write_text("", encoding="utf-8")
    with tarfile.open(bundle / "iwslt_data.tar.xz", "w:xz") as tar:
        tar.add(prepared / "data" / "train", "data/train")
        tar.add(prepared / ".stages", ".stages")
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    lib = REPO / "local" / "iwslt2012" / "gpu_lib.sh"
    script = (f'. "{lib}" && gpu_unpack "$1" "$2" && '
              'echo "unpacked, PUNCT_ENCODER_DIR=$PUNCT_ENCODER_DIR"')
    done = subprocess.run(["bash", "-c", script, "unpack", str(bundle), str(recipe)],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert (recipe / "data" / "train" / "words.tsv").read_text() == "the words\n"
    assert (recipe / ".stages" / "1.done").is_file()
    assert f"unpacked, PUNCT_ENCODER_DIR={tmp / 'punct_encoder'}" in done.stdout
    assert (tmp / "punct_encoder" / "model.safetensors").is_file()
    (bundle / "iwslt_data.tar.xz").unlink()
    # the same bundle again (the next check of a lease): nothing to unpack, same variables
    done = subprocess.run(["bash", "-c", script, "unpack", str(bundle), str(recipe)],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert f"unpacked, PUNCT_ENCODER_DIR={tmp / 'punct_encoder'}" in done.stdout
    # another bundle, incomplete: a failed status
    other = tmp_path / "other"
    shutil.copytree(bundle, other)
    done = subprocess.run(["bash", "-c", script, "unpack", str(other), str(recipe)],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode != 0 and "unpacked" not in done.stdout


def test_gpu_device_names_cuda_unless_a_dry_run() -> None:
    lib = REPO / "local" / "iwslt2012" / "gpu_lib.sh"
    done = subprocess.run(["bash", "-c", f'. "{lib}" && gpu_device 1 && gpu_device 2 && '
                           'gpu_device 0'], capture_output=True, text=True, timeout=30,
                          check=False)
    assert done.returncode == 0 and done.stdout.split() == ["cuda", "cuda", "cpu"]


def test_one_rank_opens_its_process_group(tmp_path: Path) -> None:
    """gpu_lib.sh's gpu_one_rank trains as a one-rank job with its process group open
    (gloo on the CPU, NCCL on a GPU) and brings back its log and history."""
    import json
    import os
    import sys

    import yaml
    from helpers.trainset import TINY, make_set

    make_set(tmp_path / "data" / "train", 40, 1)
    make_set(tmp_path / "data" / "dev", 8, 2)
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY, "train": {**TINY["train"], "epochs": 2}}))
    env = {**os.environ, "PYTHONPATH": str(REPO),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    lib = REPO / "local" / "iwslt2012" / "gpu_lib.sh"
    done = subprocess.run(["bash", "-c", f'. "{lib}" && gpu_one_rank "$@"', "one_rank",
                           str(config), "0", "exp/one", "out"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=env, check=False)
    assert done.returncode == 0, (tmp_path / "out" / "train.out").read_text()
    log = (tmp_path / "out" / "train.log").read_text()
    assert "1 process(es) on cpu (process group gloo)" in log
    assert len(json.loads((tmp_path / "out" / "history.json").read_text())) == 2
    assert (tmp_path / "out" / "train.out").read_text().endswith("exit 0\n")


def test_lease_runs_each_check_and_keeps_only_what_comes_back(tmp_path: Path) -> None:
    """gpu_lease.sh runs the three checks one after the other whatever each returns, logs
    every status, and puts only a few files into FETCH_DIR (here the bundle is empty, so
    each check stops at once and leaves no tarball)."""
    import os
    import sys

    bundle, fetch = tmp_path / "bundle", tmp_path / "fetch"
    bundle.mkdir()
    env = {**os.environ, "WORK": str(tmp_path / "work"), "PYTHONPATH": str(REPO),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(REPO / "local" / "iwslt2012" / "gpu_lease.sh"),
                           str(bundle), str(fetch)], capture_output=True, text=True,
                          timeout=300, env=env, check=False)
    assert done.returncode == 0, done.stderr
    log = (fetch / "lease.log").read_text().splitlines()
    assert [line.split(":")[0] for line in log] == ["check", "decode", "compile"]
    assert all(": exit 1 after " in line for line in log), log
    assert sorted(p.name for p in fetch.iterdir()) == [
        "check.tail", "compile.tail", "decode.tail", "lease.log"]
    assert run(script=REPO / "local" / "iwslt2012" / "gpu_lease.sh").returncode == 1
