"""The layers of ``backend/gradtrace``, written down once: no import runs upward, none goes round.

Every import in every module counts, at any depth (inside a function too: a lazy import is still
a dependency, it only moves the failure to run time), ``if TYPE_CHECKING:`` blocks included.

NOTE [the layer order]
    From the bottom. A module may import its own package and any package of a LOWER layer;
    packages in one layer are independent of each other.

    0. ``version``, ``errors``, ``frontend`` (the page's files), ``lessons`` (snippets as data),
       ``collector`` (the one home of garbage-collector control; imports only ``gc``)
    1. ``settings``
    2. ``schema``: the one run document model and its canonical JSON
    3. ``analysis`` (reads documents; torch-free), ``jobs`` (the job seam), ``storage``
    4. ``notebook`` (how a document shows: widget, summary, saved HTML with the explanations
       analysis works out; never records)
    5. ``capture`` (records; hands notebook documents back), ``client`` (the HTTP client;
       hands notebook documents back), ``gradcheck`` (numerical gradient checks: re-runs a
       snippet under torch; the widget's checker; its verdict is analysis')
    6. ``sandbox`` (runs jobs of every kind: capture in the child), ``magic`` (the
       ``%%gradtrace`` cell: records with capture, shows with notebook), ``compare_runs``
       (``gradtrace.compare``: documents, recordings or ids on a service, through the client,
       compared by analysis)
    7. ``queue`` (carries jobs to workers, each with a sandbox pool)
    8. ``runners`` (picks the sandbox's pool or the queue)
    9. ``api`` (the web process)
    10. ``cli``
    11. ``gradtrace`` itself: the public facade (``record``, ``show``, ``Client``)

    Inside a package there is no order, only no circle (checked over every module).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "backend" / "gradtrace"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("version", "errors", "frontend", "lessons", "collector"),
    ("settings",),
    ("schema",),
    ("analysis", "jobs", "storage"),
    ("notebook",),
    ("capture", "client", "gradcheck"),
    ("sandbox", "magic", "compare_runs"),
    ("queue",),
    ("runners",),
    ("api",),
    ("cli",),
    ("",),  # the package root
)
SKIPPED = ("gradtrace.storage.migrations",)
"""Alembic's scripts: loaded by alembic, imported by nobody."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_modules(package: Path = PACKAGE) -> dict[str, str]:
    """Every module of the package by its dotted name, as source text (``gradtrace.frontend``,
    the page's files in ``frontend/``, is a package of data: known by name, with no imports)."""
    found = {module_name(p): p.read_text() for p in package.rglob("*.py")}
    found["gradtrace.frontend"] = ""
    return {name: text for name, text in found.items() if not name.startswith(SKIPPED)}


def imports_of(name: str, source: str, *, is_package: bool) -> set[str]:
    """Every ``gradtrace`` module ``source`` imports, anywhere in it (relative imports resolved)."""
    out: set[str] = set()
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            # ``from x import name`` depends on module ``x.name`` when there is one, else on
            # ``x`` (the name is its attribute): :func:`resolve` picks. Any ``gradtrace.*``
            # import runs the root's ``__init__`` first; only a name taken from it is an edge.
            out.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in out if m == "gradtrace" or m.startswith("gradtrace.")}


def package_of(module: str) -> str:
    """``gradtrace.capture.session`` → ``capture``; ``gradtrace.jobs`` → ``jobs``; the root → ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_of(package: str, layers: tuple[tuple[str, ...], ...]) -> int:
    for index, members in enumerate(layers):
        if package in members:
            return index
    raise AssertionError(f"gradtrace.{package} has no layer: add it to LAYERS (and the NOTE)")


def resolve(imported: str, modules: Iterable[str]) -> str | None:
    """The module an import names (``from gradtrace.x import name`` names ``gradtrace.x``)."""
    known = set(modules)
    while imported and imported not in known:
        imported = imported.rpartition(".")[0]
    return imported or None


def graph_of(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """module → the modules of the package it imports."""
    graph: dict[str, set[str]] = {}
    for name, source in sources.items():
        is_package = any(other.startswith(name + ".") for other in sources)
        targets = {resolve(m, sources) for m in imports_of(name, source, is_package=is_package)}
        graph[name] = {t for t in targets if t is not None and t != name}
    return graph


def upward_imports(graph: Mapping[str, set[str]], layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[str]:
    """``a -> b`` for each import of a package in the same or a higher layer than the importer's."""
    bad = []
    for name, targets in sorted(graph.items()):
        mine = package_of(name)
        for target in sorted(targets):
            theirs = package_of(target)
            if theirs != mine and layer_of(theirs, layers) >= layer_of(mine, layers):
                bad.append(f"{name} -> {target} (layer {layer_of(mine, layers)} imports layer "
                           f"{layer_of(theirs, layers)})")
    return bad


def import_circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of modules larger than one, each as one circle's path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                circles.append(sorted(members))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def test_every_package_has_a_layer() -> None:
    for name in read_modules():
        layer_of(package_of(name), LAYERS)


def test_no_import_runs_upward() -> None:
    bad = upward_imports(graph_of(read_modules()))
    assert not bad, "imports against NOTE [the layer order]:\n" + "\n".join(bad)


def test_no_import_circle() -> None:
    circles = import_circles(graph_of(read_modules()))
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


TORCH_IMPORTERS = ("gradtrace.capture.", "gradtrace.gradcheck", "gradtrace.sandbox.",
                   "gradtrace.lessons.snippets.", "gradtrace.notebook.widget")
"""Where ``torch`` may be imported: capture, the gradient check, the sandbox's child side (the
zygote and the kinds' handlers, inside functions), the lessons' snippets, and the widget (it
hands tensors back)."""


def test_torch_is_imported_only_where_it_runs() -> None:
    for name, source in read_modules().items():
        if not name.startswith(TORCH_IMPORTERS):
            torch = {m for m in _all_imports(source) if m == "torch" or m.startswith("torch.")}
            assert not torch, f"{name} imports {sorted(torch)}"


def _all_imports(source: str) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
    return out


SYNTHETIC = {
    "gradtrace": "from gradtrace.capture import record\n",
    "gradtrace.schema": "",
    "gradtrace.capture": "from gradtrace.capture.session import record\n",
    "gradtrace.capture.session": "from gradtrace.schema import RunDocument\n",
    "gradtrace.capture.frames": "",
    "gradtrace.notebook": "",
    "gradtrace.notebook.show": "def show():\n    from gradtrace.schema import RunDocument\n",
}


@pytest.mark.parametrize(("module", "bad_line", "expected"), [
    ("gradtrace.notebook.show", "from gradtrace.capture import record\n", "upward"),
    ("gradtrace.capture.session", "import gradtrace\n", "upward"),
    ("gradtrace.schema", "def f():\n    from gradtrace.capture import frames\n", "upward"),
    ("gradtrace.notebook.show", "if TYPE_CHECKING:\n    from gradtrace.capture import frames\n", "upward"),
    ("gradtrace.capture.frames", "from . import session\n", "circle"),
    ("gradtrace.capture.frames", "from gradtrace.capture.session import record\n", "clean"),
])
def test_the_checks_fail_on_a_deliberately_bad_import(module: str, bad_line: str, expected: str) -> None:
    """The checker on a synthetic package: clean as written, and caught with one bad import."""
    layers = (("schema",), ("notebook",), ("capture",), ("",))
    clean = graph_of(SYNTHETIC)
    assert upward_imports(clean, layers) == [] and import_circles(clean) == []
    sources = {**SYNTHETIC, module: SYNTHETIC[module] + bad_line}
    if expected == "circle":  # frames -> session, and session -> frames closes the circle
        sources["gradtrace.capture.session"] += "from gradtrace.capture import frames\n"
    graph = graph_of(sources)
    upward, circles = upward_imports(graph, layers), import_circles(graph)
    if expected == "upward":
        assert upward and all(line.startswith(module + " -> ") for line in upward), upward
    elif expected == "circle":
        assert any({"gradtrace.capture.frames", "gradtrace.capture.session"} <= set(c) for c in circles)
        assert not upward
    else:
        assert not upward and not circles, (upward, circles)


ANALYSIS = PACKAGE / "analysis"
ROOMS = ("compare", "explain", "goals", "hints", "nonfinite")
"""The rooms of ``analysis/``, one per concept; each exports its entry points from its ``__init__``."""
TOP_LEVEL_MODULES = 10


def test_analysis_rooms_are_entered_through_their_package() -> None:
    """Outside a room, a module imports the room's package (its entry points), never a module
    inside it: the room may then rearrange itself without touching its callers. (Tests and
    benchmarks of an inner unit import it directly; they are not in the package.)"""
    bad = []
    for name, targets in sorted(graph_of(read_modules()).items()):
        for room in ROOMS:
            inside = f"gradtrace.analysis.{room}"
            if name == inside or name.startswith(inside + "."):
                continue
            bad += [f"{name} -> {t}" for t in sorted(targets) if t.startswith(inside + ".")]
    assert not bad, "imports past a room's entry points:\n" + "\n".join(bad)


def test_analysis_top_level_is_small_and_has_no_prefix_families() -> None:
    """At most ``TOP_LEVEL_MODULES`` modules beside the rooms, and no family of modules named by
    a shared prefix (``hints_flow``, ``hints_graph``): such a family is a room."""
    names = sorted(p.stem for p in ANALYSIS.glob("*.py") if p.stem != "__init__")
    assert len(names) <= TOP_LEVEL_MODULES, names
    prefixes: dict[str, list[str]] = {}
    for stem in names:
        prefixes.setdefault(stem.split("_")[0], []).append(stem)
    families = {p: ms for p, ms in prefixes.items() if len(ms) > 1 or p in ROOMS}
    assert not families, f"prefix families at analysis/'s top level: {families}"
    rooms = {p.name for p in ANALYSIS.iterdir() if (p / "__init__.py").is_file()}
    assert set(ROOMS) <= rooms, sorted(rooms)
