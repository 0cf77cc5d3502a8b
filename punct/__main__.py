"""``punct TOOL [ARGS]`` (or ``python -m punct TOOL``): every ``punct.bin`` tool as a subcommand.

``punct restore ...`` is ``punct-restore ...`` is ``python -m punct.bin.restore ...``: the
tool's own ``main`` parses the arguments, so ``punct TOOL --help`` is the tool's help.
``punct --help`` lists the tools with the first line of their docstrings (read from the
source, so listing imports nothing heavy).
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

from punct.errors import report_error
from punct.extras import MissingExtraError

BIN_DIR = Path(__file__).resolve().parent / "bin"


def tools() -> dict[str, str]:
    """Tool name -> one-line summary, for every ``punct/bin/<tool>.py`` with a ``main``."""
    out: dict[str, str] = {}
    for path in sorted(BIN_DIR.glob("*.py")):
        if path.name.startswith("_"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not any(isinstance(node, ast.FunctionDef) and node.name == "main"
                   for node in tree.body):
            continue
        doc = (ast.get_docstring(tree) or "").strip().splitlines()
        out[path.stem] = doc[0].rstrip(".") if doc else ""
    return out


def usage() -> str:
    known = tools()
    width = max(map(len, known), default=0)
    lines = ["usage: punct TOOL [ARGS ...]   (punct TOOL --help for a tool's options)", "",
             "tools:"]
    lines += [f"  {name:<{width}}  {summary}" for name, summary in known.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0 if args else 2
    name, rest = args[0].replace("-", "_"), args[1:]
    if name not in tools():
        print(f"punct: unknown tool {args[0]!r}\n\n{usage()}", file=sys.stderr)
        return 2
    try:
        module = importlib.import_module(f"punct.bin.{name}")
    except MissingExtraError as err:  # a tool of an optional extra that is not installed
        return report_error(name, err)
    try:
        return int(module.main(rest) or 0)
    except SystemExit as done:  # argparse --help / usage errors
        return int(done.code or 0) if not isinstance(done.code, str) else 2


if __name__ == "__main__":
    raise SystemExit(main())
