"""The package's layout shows the pipeline, and its imports keep to it: plan -> execute ->
store -> analysis -> reports, with the host's facilities below them all and the CLI on
top. Checked on the source, so that a module moved or an import added against the grain
fails here, not in a reviewer's head."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import fsbench

PACKAGE = Path(fsbench.__file__).parent
MAX_LINES = 600
MAX_TOP_ENTRIES = 12  # as `ls src/fsbench` shows them, __pycache__ included


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def _imports(path: Path, module: str, top_level_only: bool) -> set[str]:
    """The fsbench modules `path` imports (module-level statements only when asked: those
    make an import circle; an import inside a function runs later)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("fsbench"):
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("fsbench"))
    known = dict(_modules())
    return {m for m in found if m in known and m != module}


def test_the_top_level_shows_the_pipeline() -> None:
    entries = sorted(p.name for p in PACKAGE.iterdir() if p.name != "__pycache__")
    assert len(entries) + 1 <= MAX_TOP_ENTRIES, entries
    for layer in ("plan", "execute", "store", "analysis", "reports", "system", "cli"):
        assert (PACKAGE / layer / "__init__.py").is_file(), layer


def test_no_module_is_longer_than_600_lines() -> None:
    long = {m: n for m, p in _modules() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


# The layers, lowest first: a module imports only from its own layer and the layers below
# it, at the top of the module or inside a function alike (an import inside a function is
# still an import: a circle that closes through one is still a circle).
LAYERS = (
    ("system",),
    ("workloads",),
    ("plan",),
    ("store",),
    ("analysis",),
    ("execute",),
    ("vm", "fleet"),  # the target kinds that are packages of their own, and what runs there
    ("reports",),
    ("cli",),
)


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) < 2:
        return None  # the package itself (fsbench.__version__): below every layer
    for rank, names in enumerate(LAYERS):
        if parts[1] in names:
            return rank
    return None


def test_no_module_imports_a_layer_above_its_own() -> None:
    """Counted with the imports inside functions."""
    upward = []
    for module, path in _modules():
        mine = _layer(module)
        for imported in _imports(path, module, top_level_only=False):
            theirs = _layer(imported)
            if mine is None or theirs is None:
                continue
            if theirs > mine or (theirs == mine and module.split(".")[1] != imported.split(".")[1]):
                upward.append(f"{module} -> {imported}")
    assert sorted(set(upward)) == []


def test_every_package_is_in_a_layer() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    assert packages == {n for names in LAYERS for n in names}


def test_the_target_kinds_packages_are_known_only_to_themselves_and_the_cli() -> None:
    """vm/ and fleet/ are target kinds: nothing below them names them, in code or words
    (the store's migration history aside, for the column names schema 6 gave)."""
    for name in ("vm", "fleet"):
        knowing = {
            str(p.relative_to(PACKAGE))
            for p in PACKAGE.rglob("*.py")
            if re.search(rf"\bfsbench\.{name}\b", p.read_text())
        }
        outside = {k for k in knowing if not k.startswith((f"{name}/", "cli/"))}
        assert outside == set(), (name, outside)


def test_analysis_never_imports_presentation_and_nothing_below_imports_the_cli() -> None:
    wrong = []
    for module, path in _modules():
        for imported in _imports(path, module, top_level_only=False):
            if module.startswith("fsbench.analysis") and imported.startswith(
                ("fsbench.reports", "fsbench.cli")
            ):
                wrong.append(f"{module} -> {imported}")
            if not module.startswith("fsbench.cli") and imported.startswith("fsbench.cli"):
                wrong.append(f"{module} -> {imported}")
    assert wrong == []


def test_there_is_no_import_circle() -> None:
    graph = {m: _imports(p, m, top_level_only=False) for m, p in _modules()}
    # A package imports its own modules (its __init__ re-exports): not a circle of layers.
    for module, imported in graph.items():
        graph[module] = {i for i in imported if not module.startswith(i + ".")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert circles == []


def test_only_the_fleet_package_and_its_command_know_the_fleet() -> None:
    """A run on many machines is a target kind like any: outside fleet/ and its command,
    the word appears only in the store's migration history (the column names schema 6
    gave, renamed by schema 7)."""
    knowing = {
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*")
        if p.is_file() and p.suffix in (".py", ".yml", ".toml", ".css") and "fleet" in p.read_text()
    }
    outside = {k for k in knowing if not k.startswith("fleet/")}
    # The commands' table (cli/app.py) names every command module, the fleet's too.
    assert outside == {"cli/fleet.py", "cli/app.py", "store/schema.py"}
    history = [
        line
        for line in (PACKAGE / "store" / "schema.py").read_text().splitlines()
        if "fleet" in line
    ]
    assert all("Added(" in line or "Renamed(" in line for line in history), history
