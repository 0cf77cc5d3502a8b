"""Jobs split once: the assignment rule, split files, stale splits, shared merging."""

from __future__ import annotations

from pathlib import Path

import pytest

from punct.bin import split_data
from punct.errors import MissingDataError, PunctInputError
from punct.jobs_split import (
    assign,
    finished_parts,
    job_ids,
    job_items,
    merge_kv_parts,
    read_split,
    split_file,
    write_splits,
)


def test_assign_is_round_robin_in_order() -> None:
    assert assign(["a", "b", "c", "d", "e"], 2) == [["a", "c", "e"], ["b", "d"]]
    assert assign(["a"], 3) == [["a"], [], []]
    with pytest.raises(ValueError):
        assign(["a"], 0)


def test_write_then_read_split(tmp_path: Path) -> None:
    write_splits(tmp_path, ["u1", "u2", "u3"], 2)
    assert split_file(tmp_path, 2, 2) == tmp_path / "split2" / "2" / "ids"
    assert read_split(tmp_path, 1, 2) == ["u1", "u3"]
    assert read_split(tmp_path, 2, 2) == ["u2"]
    with pytest.raises(MissingDataError, match="no split for job 1 of 3"):
        read_split(tmp_path, 1, 3)


def test_tools_read_the_written_split_and_rewrite_a_stale_one(tmp_path: Path) -> None:
    # A split written by hand is what the job gets (not recomputed) ...
    (tmp_path / "split2" / "1").mkdir(parents=True)
    (tmp_path / "split2" / "2").mkdir(parents=True)
    (tmp_path / "split2" / "1" / "ids").write_text("b\n", encoding="utf-8")
    (tmp_path / "split2" / "2" / "ids").write_text("a\nc\n", encoding="utf-8")
    assert job_ids(tmp_path, ["a", "b", "c"], 1, 2) == ["b"]
    # ... unless it no longer lists the same ids: then it is written again.
    assert job_ids(tmp_path, ["a", "b", "c", "d"], 2, 2) == ["b", "d"]
    assert read_split(tmp_path, 1, 2) == ["a", "c"]
    # One job takes everything and writes nothing.
    assert job_ids(tmp_path / "none", ["x", "y"], 1, 1) == ["x", "y"]
    assert not (tmp_path / "none").exists()
    items = [("a", 1), ("b", 2), ("c", 3), ("d", 4)]
    assert job_items(tmp_path, items, lambda t: t[0], 1, 2) == [("a", 1), ("c", 3)]


def test_finished_parts_names_the_missing_job(tmp_path: Path) -> None:
    (tmp_path / "out.1").write_text("a 1\n", encoding="utf-8")
    with pytest.raises(MissingDataError, match=r"job 2 of 2 has not finished \(run it with "
                                                r"--job 2\)"):
        finished_parts(lambda job: tmp_path / f"out.{job}", 2)
    (tmp_path / "out.2").write_text("b 2\n", encoding="utf-8")
    assert finished_parts(lambda job: tmp_path / f"out.{job}", 2) == [
        tmp_path / "out.1", tmp_path / "out.2"]


def test_merge_kv_parts_sorts_and_refuses_duplicates(tmp_path: Path) -> None:
    one, two = tmp_path / "1.scp", tmp_path / "2.scp"
    one.write_text("b x.ark:2\na x.ark:1\n", encoding="utf-8")
    two.write_text("B y.ark:1\n", encoding="utf-8")
    assert merge_kv_parts([one, two], tmp_path / "all.scp") == 3
    assert (tmp_path / "all.scp").read_text(encoding="utf-8") == (
        "B y.ark:1\na x.ark:1\nb x.ark:2\n")
    two.write_text("c\n", encoding="utf-8")
    with pytest.raises(PunctInputError, match="expected '<key> <value>'") as err:
        merge_kv_parts([one, two], tmp_path / "all.scp")
    assert err.value.line == 1
    two.write_text("a y.ark:9\n", encoding="utf-8")
    with pytest.raises(PunctInputError, match="'a' is also in"):
        merge_kv_parts([one, two], tmp_path / "all.scp")


def test_split_data_cli_splits_the_audio_utterances(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "wav.scp").write_text("r1 a.wav\nr2 b.wav\n", encoding="utf-8")
    (data / "segments").write_text("u3 r2 0 1\nu1 r1 0 1\nu2 r1 1 2\n", encoding="utf-8")
    assert split_data.main(["--data-dir", str(data), "--num-jobs", "2"]) == 0
    assert read_split(data, 1, 2) == ["u1", "u3"]
    assert read_split(data, 2, 2) == ["u2"]
    assert split_data.main(["--data-dir", str(tmp_path), "--num-jobs", "2"]) == 2
