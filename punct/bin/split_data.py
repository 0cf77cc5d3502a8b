"""Write the per-job splits of a data dir's utterances with audio (Kaldi's split_data.sh).

    python -m punct.bin.split_data --data-dir data/test --num-jobs 4

writes ``data/test/split4/<J>/ids`` (J = 1..4), the utterances each ``--job J`` of the
audio tools (align, make_fbank, make_prosody) processes (``--data-dir`` may be
repeated). The recipe writes them before launching a job array; a tool that finds them
missing or stale writes them itself.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from punct.data.audio import audio_utt_ids
from punct.errors import PunctInputError, report_error
from punct.jobs_split import write_splits


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m punct.bin.split_data", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", required=True, action="append",
                   help="Kaldi data dir with wav.scp (repeat for several)")
    p.add_argument("--num-jobs", type=int, required=True, help="number of jobs")
    args = p.parse_args(argv)
    if args.num_jobs < 1:
        p.error("--num-jobs must be >= 1")
    for data_dir in args.data_dir:
        try:
            ids = audio_utt_ids(data_dir)
            out = write_splits(data_dir, ids, args.num_jobs)
        except PunctInputError as err:
            return report_error("split_data", err)
        print(f"split_data: {len(ids)} utterances in {args.num_jobs} jobs -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
