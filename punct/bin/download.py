"""Download a file (resumable, sha256-checked) or extract an archive safely.

Examples:
  python -m punct.bin.download --url https://host/file.tgz --out downloads/file.tgz \
      --sha256 <hex> --min-free-gb 30
  python -m punct.bin.download --extract downloads/file.tgz --to downloads/corpus

See ``punct.data.download`` for the guarantees (Range resume, no corrupt file left
behind, free disk space checked, path traversal refused). Exit status 2 when the file
cannot be fetched, 1 for a checksum mismatch, too little disk space or an unsafe archive.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from punct.data.download import download, safe_extract
from punct.errors import PunctInputError, report_error


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.download", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", help="what to download")
    p.add_argument("--out", type=Path, help="where the file goes (with --url)")
    p.add_argument("--sha256", help="expected sha256 (hex) of the file")
    p.add_argument("--retries", type=int, default=3, help="resumed retries (default 3)")
    p.add_argument("--timeout", type=float, default=60.0, help="socket timeout, s")
    p.add_argument("--min-free-gb", type=float, default=0.0,
                   help="free space to keep beyond the file itself (GB)")
    p.add_argument("--extract", type=Path, help="a tar or zip archive to extract")
    p.add_argument("--to", type=Path, help="the target directory of --extract")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if bool(args.url) == bool(args.extract):
        p.error("give either --url/--out or --extract/--to")
    margin = int(args.min_free_gb * 1e9)
    try:
        if args.url:
            if args.out is None:
                p.error("--url needs --out")
            out = download(args.url, args.out, args.sha256, retries=args.retries,
                           timeout=args.timeout, free_margin=margin)
            print(f"download: {out} ({out.stat().st_size} bytes"
                  + (", sha256 verified)" if args.sha256 else ")"))
        else:
            if args.to is None:
                p.error("--extract needs --to")
            names = safe_extract(args.extract, args.to, free_margin=margin)
            print(f"download: extracted {len(names)} members of {args.extract} into {args.to}")
    except PunctInputError as err:
        return report_error("download", err)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
