"""The package's layers (docs/ARCHITECTURE.md), checked on the source with ``ast``: imports
only point down, no import circle, no private name imported across modules, imports at the
top of modules unless listed below with why, and tests that do not import one another."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "punct"

#: Layers from the bottom; a module may import from its own top-level package and from
#: lower layers only. Packages sharing a layer do not import one another.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("punct", "punct.errors", "punct.registry", "punct.conf", "punct.atomic"),
    ("punct.data", "punct.labels", "punct.wordtable", "punct.kaldi", "punct.jobs_split",
     "punct.config", "punct.extras"),
    ("punct.features", "punct.models"),
    ("punct.engine", "punct.asr", "punct.synth", "punct.score", "punct.launch"),
    ("punct.train", "punct.infer", "punct.align", "punct.export"),
    ("punct.api",),
    ("punct.bin", "punct.__main__"),
)

#: At most this many floors (docs/ARCHITECTURE.md draws them).
MAX_FLOORS = 7

#: The pipelines: one floor, no imports between them (what they share sits below).
PIPELINES = ("punct.train", "punct.infer", "punct.align", "punct.export")

#: The data layer's modules are one floor: they may import one another (no circles).
SHARED_FLOOR = 1

#: Upward imports still there, each waiting for a change in a lead-owned file.
UPWARD_ALLOWED = {
    # The root's `from punct import Restorer` hook (loads punct.api on first use); the
    # modules below import nothing from the root but __version__.
    ("punct", "punct.api"),
}

#: Private names imported across modules (none left).
PRIVATE_ALLOWED: set[tuple[str, str, str]] = set()

#: Modules that import parts of the package inside functions, and why (optional or heavy).
LAZY_ALLOWED = {
    # upward too (UPWARD_ALLOWED): at the top it would close an import circle
    "punct": "punct.api (torch) loads on first use of Restorer: `import punct` stays light",
}

#: Imports of any module inside functions: at most this many, each with its reason on the
#: same line (optional extras stay late, so that the wheel alone runs its commands).
MAX_LATE_IMPORTS = 15
LATE_REASONS = ("# optional extra: ", "# heavy, not needed by every command: ")


@dataclass(frozen=True)
class Import:
    """One ``import``/``from ... import`` of a package module."""

    source: str        # importing module
    target: str        # imported module
    names: tuple[str, ...]
    line: int
    lazy: bool         # inside a function


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    """The package imports of one module (``from pkg import submodule`` is an import of
    the submodule)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.extend(Import(name, a.name, (), child.lineno, inner) for a in child.names
                             if a.name.split(".")[0] == "punct")
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package
                    for _ in range(child.level - 1):
                        anchor = anchor.rpartition(".")[0]
                    base = f"{anchor}.{base}" if base else anchor
                if base.split(".")[0] == "punct":
                    names = tuple(a.name for a in child.names)
                    subs = tuple(n for n in names if f"{base}.{n}" in modules)
                    found.extend(Import(name, f"{base}.{n}", (), child.lineno, inner)
                                 for n in subs)
                    rest = tuple(n for n in names if n not in subs)
                    if rest or not subs:
                        found.append(Import(name, base, rest, child.lineno, inner))
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def layer_of(module: str) -> tuple[int, str]:
    """(floor, owning package) of a module: the longest matching layer entry (the root
    ``punct`` entry is the package's ``__init__`` alone)."""
    best: tuple[int, str] | None = None
    for floor, entries in enumerate(LAYERS):
        for entry in entries:
            if module == entry or (entry != "punct" and module.startswith(entry + ".")):
                if best is None or len(entry) > len(best[1]):
                    best = (floor, entry)
    if best is None:
        raise AssertionError(f"{module} is on no floor: add its package to LAYERS "
                             "(and to docs/ARCHITECTURE.md)")
    return best


def is_upward(imp: Import) -> bool:
    (src_floor, src_pkg), (dst_floor, dst_pkg) = layer_of(imp.source), layer_of(imp.target)
    if src_pkg == dst_pkg or (src_floor == dst_floor == SHARED_FLOOR):
        return False
    return dst_floor >= src_floor


@pytest.fixture(scope="module")
def graph() -> list[Import]:
    modules = package_modules()
    return [imp for name, path in modules.items() for imp in imports_of(name, path, modules)]


def where(imp: Import) -> str:
    return f"{imp.source.replace('.', '/')}.py:{imp.line}"


def test_every_module_is_on_a_floor() -> None:
    for name in package_modules():
        layer_of(name)


def test_few_floors_and_the_pipelines_are_siblings() -> None:
    assert len(LAYERS) <= MAX_FLOORS, f"{len(LAYERS)} floors (at most {MAX_FLOORS})"
    floors = {layer_of(name)[0] for name in PIPELINES}
    assert len(floors) == 1 and floors != {SHARED_FLOOR}, \
        f"train, infer, align and export on floors {sorted(floors)}: they must share one"


def test_imports_only_point_down(graph: list[Import]) -> None:
    bad = sorted({f"{where(i)}: {i.source} imports {i.target}" for i in graph
                  if is_upward(i) and (i.source, i.target) not in UPWARD_ALLOWED})
    assert not bad, "upward or sideways imports:\n" + "\n".join(bad)


def test_allow_lists_hold_only_what_is_still_there(graph: list[Import]) -> None:
    upward = {(i.source, i.target) for i in graph if is_upward(i)}
    private = {(i.source, i.target, n) for i in graph for n in i.names}
    lazy = {i.source for i in graph if i.lazy}
    assert not UPWARD_ALLOWED - upward, f"stale UPWARD_ALLOWED: {UPWARD_ALLOWED - upward}"
    assert not PRIVATE_ALLOWED - private, f"stale PRIVATE_ALLOWED: {PRIVATE_ALLOWED - private}"
    assert not set(LAZY_ALLOWED) - lazy, f"stale LAZY_ALLOWED: {set(LAZY_ALLOWED) - lazy}"


def test_no_import_circle(graph: list[Import]) -> None:
    modules = package_modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for imp in graph:
        if imp.target in modules and imp.target != imp.source:
            edges[imp.source].add(imp.target)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt):], nxt]
                raise AssertionError("import circle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(modules):
        if module not in state:
            visit(module)


def test_no_private_name_across_modules(graph: list[Import]) -> None:
    bad = sorted(f"{where(i)}: {name} from {i.target}" for i in graph for name in i.names
                 if name.startswith("_") and not name.startswith("__")
                 and i.target != i.source and (i.source, i.target, name) not in PRIVATE_ALLOWED)
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)


def test_package_imports_sit_at_the_top(graph: list[Import]) -> None:
    bad = sorted(f"{where(i)}: {i.target}" for i in graph
                 if i.lazy and i.source not in LAZY_ALLOWED)
    assert not bad, ("imports inside functions (move them to the top, or list the module in "
                     "LAZY_ALLOWED with why):\n" + "\n".join(bad))


def late_imports(path: Path) -> list[tuple[int, str]]:
    """(line number, first source line) of every import statement inside a function."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if inside and isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append((child.lineno, lines[child.lineno - 1].strip()))
            visit(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(ast.parse(text), False)
    return found


def test_few_imports_inside_functions_each_with_its_reason() -> None:
    late = [f"{path.relative_to(ROOT)}:{line}: {source}" for path in sorted(PACKAGE.rglob("*.py"))
            for line, source in late_imports(path)]
    assert len(late) <= MAX_LATE_IMPORTS, (
        f"{len(late)} imports inside functions (at most {MAX_LATE_IMPORTS}; move core ones "
        "to the top):\n" + "\n".join(late))
    bad = [entry for entry in late if not any(reason in entry for reason in LATE_REASONS)]
    assert not bad, ("imports inside functions without their reason on the line "
                     f"({' or '.join(repr(r + '...') for r in LATE_REASONS)}):\n"
                     + "\n".join(bad))


def test_tests_do_not_import_tests_and_helpers_stay_out_of_the_package() -> None:
    bad = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names
                    if n.split(".")[0].startswith(("test_", "conftest", "tiny"))]
    assert not bad, "tests importing test modules (use tests/helpers):\n" + "\n".join(bad)
    assert not [p for p in PACKAGE.rglob("*.py") if "test" in p.stem], \
        "test helpers belong under tests/helpers, not in the package"


def test_checker_sees_upward_private_and_lazy_imports(tmp_path: Path) -> None:
    """The checker itself: a made-up models module importing up, privately and lazily."""
    path = tmp_path / "punct" / "models" / "fake.py"
    path.parent.mkdir(parents=True)
    path.write_text("from punct.engine.decode import decide\n"
                    "from punct.models.base import _hidden\n"
                    "def f():\n    import punct.data.windows\n", encoding="utf-8")
    imps = imports_of("punct.models.fake", path, {})
    assert [(i.target, i.names, i.lazy) for i in imps] == [
        ("punct.engine.decode", ("decide",), False), ("punct.models.base", ("_hidden",), False),
        ("punct.data.windows", (), True)]
    assert [is_upward(i) for i in imps] == [True, False, False]
    assert late_imports(path) == [(4, "import punct.data.windows")]
