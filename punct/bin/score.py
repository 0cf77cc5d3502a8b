"""Score a hypothesis word table against the reference: writes scores.json.

The hypothesis' words may differ from the reference's (an ASR transcript): they are then
aligned by edit distance, the punctuation and capitalisation figures are counted over the
aligned word slots and each metrics group gets the WER (``asr``); see docs/ASR.md.
``--strict`` refuses differing words instead.

Example:
  python -m punct.bin.score --ref data/test/words.tsv --hyp exp/X/decode_test/words.tsv \\
      --utt2lang data/test/utt2lang --decode-info exp/X/decode_test/decode.json \\
      --out exp/X/decode_test/scores.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Any

from punct.atomic import atomic_write_text
from punct.data.nonspeech import add_nonspeech_option
from punct.errors import MissingDataError, PunctInputError, report_error
from punct.kaldi import read_utt2lang
from punct.labels import LABEL_SETS, get_label_set
from punct.score.metrics import DEFAULT_LANG_GROUPS, score_tables, speech_rows
from punct.score.text_metrics import BASELINE_CACHE, text_metrics
from punct.wordtable import read_word_table

FORMAT = "punct-scores/1"


def system_name(hyp: Path) -> str:
    """``exp/X/decode_test/words.tsv`` -> ``X``."""
    parent = hyp.resolve().parent
    return parent.parent.name if parent.name.startswith("decode") else parent.name


def test_set_name(ref: Path) -> str:
    """``data/test/words.tsv`` -> ``test``."""
    return ref.resolve().parent.name


def corpus_name(ref: Path) -> str | None:
    """``.../egs/<corpus>/...`` -> ``<corpus>``, else None."""
    parts = ref.resolve().parts
    for i, part in enumerate(parts[:-1]):
        if part == "egs":
            return parts[i + 1]
    return None


def read_decode_info(path: Path) -> dict[str, Any]:
    """The decoder's JSON (words_per_second, device, batch_size, cap_modelled, ...)."""
    if not path.is_file():
        raise MissingDataError("decode info not found", path)
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise PunctInputError(f"invalid JSON: {err.msg}", path, err.lineno) from None
    if not isinstance(info, dict):
        raise PunctInputError("decode info must be a JSON object", path, 1)
    return info


def build_scores(args: argparse.Namespace) -> dict[str, Any]:
    """The scores document for the parsed command line."""
    ref_path, hyp_path = Path(args.ref), Path(args.hyp)
    decode = read_decode_info(Path(args.decode_info)) if args.decode_info else {}
    # Default: the label set the system was trained with (decode.json), else full13.
    label_set = get_label_set(args.label_set or decode.get("label_set") or "full13")
    # both sides on their speech words: non-speech rows (restore output) are no slots
    ref = speech_rows(read_word_table(ref_path), args.nonspeech)
    hyp = speech_rows(read_word_table(hyp_path), args.nonspeech)
    utt2lang = read_utt2lang(args.utt2lang) if args.utt2lang else None
    metrics = score_tables(
        ref, hyp, label_set, utt2lang, lang_groups=args.lang_group, ref_path=ref_path,
        hyp_path=hyp_path, utt2lang_path=args.utt2lang, nonspeech=args.nonspeech,
        strict=args.strict,
    )
    return {
        "format": FORMAT,
        "system": args.system or system_name(hyp_path),
        "test_set": args.test_set or test_set_name(ref_path),
        "corpus": args.corpus or corpus_name(ref_path),
        "label_set": label_set.name,
        "labels": list(label_set.labels),
        "cap_modelled": bool(decode.get("cap_modelled", True)),
        "ref": str(ref_path),
        "hyp": str(hyp_path),
        "utt2lang": args.utt2lang,
        "nonspeech": args.nonspeech,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "counts": {"utterances": metrics["all"]["utterances"],
                   "words": metrics["all"]["words"]},
        "metrics": metrics,
        "text": text_metrics(ref, hyp, ref_path.parent / BASELINE_CACHE),
        "decode": decode,
    }


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.score", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ref", required=True, help="reference word table (words.tsv)")
    p.add_argument("--hyp", required=True,
                   help="hypothesis word table (its words may differ: they are aligned)")
    p.add_argument("--out", required=True, help="scores JSON to write")
    p.add_argument("--utt2lang", help="utt2lang of the test set: adds per-language metrics")
    p.add_argument("--label-set", default=None, choices=sorted(LABEL_SETS),
                   help="label set both sides are mapped to (default: the system's, from "
                        "--decode-info, else full13)")
    p.add_argument("--decode-info", help="decode.json of the decoder (speed, device, ...)")
    p.add_argument("--system", help="system name (default: the exp dir of --hyp)")
    p.add_argument("--test-set", help="test set name (default: the data dir of --ref)")
    p.add_argument("--corpus", help="corpus name (default: from an egs/<corpus>/ path)")
    p.add_argument("--strict", action="store_true",
                   help="refuse a hypothesis whose words differ from the reference's "
                        "(instead of aligning them)")
    add_nonspeech_option(p)
    p.add_argument("--lang-group", action="append", default=None,
                   help="languages scored together, e.g. es+eu (repeatable; default: "
                        + " ".join(DEFAULT_LANG_GROUPS) + ")")
    return p


def write_scores(args: argparse.Namespace) -> str:
    """Score the parsed command line's hypothesis, write ``--out``; return the one-line
    summary."""
    if args.lang_group is None:
        args.lang_group = list(DEFAULT_LANG_GROUPS)
    doc = build_scores(args)
    atomic_write_text(args.out, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    m = doc["metrics"]["all"]
    ser = "n/a" if m["ser"] is None else f"{100 * m['ser']:.1f}"
    asr = m.get("asr")
    wer = "" if asr is None or asr["wer"] is None else f", WER {100 * asr['wer']:.1f}"
    return (f"{doc['system']} on {doc['test_set']} ({doc['label_set']}): "
            f"{m['words']} words{wer}, micro-F1 {100 * m['micro_f1']:.1f}, "
            f"macro-F1 {100 * m['macro_f1']:.1f}, SER {ser}, "
            f"cap micro-F1 {100 * m['cap_micro_f1']:.1f}, BLEU {doc['text']['bleu']:.1f}, "
            f"chrF {doc['text']['chrf']:.1f}, TER {doc['text']['ter']:.1f} -> {args.out}")


def decoded_set_args(data_dir: Path, out_dir: Path, system: str, nonspeech: str
                     ) -> argparse.Namespace:
    """The scoring of a decoded data dir as the stage driver does it: against
    ``ref_words.tsv`` where the set has one (an ASR twin, scored against the reference
    words), else its ``words.tsv``; with its ``utt2lang`` and the label set its
    ``score_label_set`` names, if any (e.g. the full-mark reference)."""
    ref = data_dir / "ref_words.tsv"
    if not ref.is_file():
        ref = data_dir / "words.tsv"
    utt2lang = data_dir / "utt2lang"
    label_file = data_dir / "score_label_set"
    label_set = (label_file.read_text(encoding="utf-8").strip()
                 if label_file.is_file() else None)
    argv = ["--ref", str(ref), "--hyp", str(out_dir / "words.tsv"),
            "--decode-info", str(out_dir / "decode.json"), "--system", system,
            "--test-set", data_dir.name, "--out", str(out_dir / "scores.json"),
            "--nonspeech", nonspeech]
    if utt2lang.is_file():
        argv += ["--utt2lang", str(utt2lang)]
    if label_set:
        argv += ["--label-set", label_set]
    return parser().parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        line = write_scores(args)
    except PunctInputError as err:
        return report_error("score", err)
    print(line)
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
