"""The package's shape: no import cycle, layers that point one way, no file over 300 lines.

The import graph is read statically: every `archscope/**/*.py` is parsed with `ast` and every
import statement anywhere in it (module level, inside functions, classes, `if` and `try`
blocks, `TYPE_CHECKING` blocks alike) that names an `archscope` module adds edges. A lazy import
inside a function is still a dependency, and a cycle through one is only a cycle that has not
bitten yet. Module names: `archscope/a/b.py` is `archscope.a.b`, `archscope/a/__init__.py` is
`archscope.a` (the package and its `__init__` are one node).

How an import statement in module M becomes edges M -> T:

* `import archscope.a.b` (with or without `as`): the target is `archscope.a.b`.
* `from P import n` (P absolute, or relative resolved against M's package): the target is
  `P.n` when `n` is a submodule of P (a file `P/n.py` or a package `P/n/`), otherwise P itself,
  i.e. the package `__init__` that must already define `n`. `from P import *` targets P.
* The target is always an edge, even when it is a package that contains M: a submodule doing
  `from archscope.spec import X` depends on `archscope/spec/__init__.py` having run far enough
  to define X, so if that `__init__` (directly or through others) imports the submodule, that is
  a cycle (`archscope.spec.hf -> archscope.spec -> archscope.spec.hf`).
* Python also runs every package above the target before the target (`import a.b.c` runs `a`,
  then `a.b`). Those implicit parents are edges too, except packages that contain M itself: they
  were started before M, so M does not depend on them beyond what it names explicitly. Thus
  `archscope.measure.profile` doing `from archscope.measure import fast` is the edge
  `-> archscope.measure.fast` only, and `archscope.report.x` doing
  `from archscope.estimate.flops import f` is `-> archscope.estimate.flops` and
  `-> archscope.estimate`. The root package `archscope` contains every module, so it is never
  an implicit edge.
* `importlib.import_module("archscope.a.b")` with a literal name is `import archscope.a.b`;
  with an f-string whose literal start is `archscope.a.` (`f"archscope.kinds.{name}"`) it
  counts as importing every direct submodule of `archscope.a`, since any of them may be named.
  Other computed names are not seen.
* Self-edges are dropped. Imports of anything outside `archscope` are ignored here.

Layers are checked per unit: a unit is the first name below `archscope` (`archscope.spec.hf` is
`spec`, `archscope.cli` is `cli`, `archscope.errors` is `errors`). `LAYERS` lists what each unit
may import besides itself (importing the root package `archscope`, e.g. `__version__`, is
always allowed); a unit missing from it fails the test until someone adds it, and the table
itself must have no cycle. Each explicit import (not the implicit parents, which are in the
same unit) is checked, and a failure names the file, line, importer and target.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "archscope"
PACKAGE = "archscope"
MAX_LINES = 300

ANY = "*"
PURE = {"errors", "units", "writes", "reads", "interrupts", "tables", "progress"}  # leaves
# (stdlib, tabulate for tables, tqdm for progress): error types, numbers, safe writes, safe
# reads, signals while writing, markdown and CSV tables, the progress bar on stderr
# unit -> the units it may import besides itself; lower layers first. To add a subpackage, add a
# row here (and its name to the rows of the units that may use it).
LAYERS: dict[str, set[str] | str] = {
    "errors": set(),
    "units": set(),
    "interrupts": set(),  # stdlib only: signals turned into cleanup while writing
    # stdlib only: destination checks, atomic writes
    "writes": {"errors", "interrupts", "reads"},
    "reads": {"errors"},  # stdlib only: regular files within a size limit, never blocking
    "tables": set(),  # tabulate and csv: rows -> markdown or CSV
    "progress": set(),  # tqdm: the long steps' bar on stderr
    "devices": {"errors"},  # torch/psutil only: device names and free memory
    "spec": PURE,  # no torch: YAML and config.json <-> ModelSpec
    "kinds": {"spec"} | PURE,  # names torch modules by import path, never imports them
    # no torch (tests/estimate/test_summary.py checks); the fit estimates read the catalog
    "estimate": {"kinds", "spec", "hardware"} | PURE,
    # the cited accelerator catalog; the CPU probe imports torch, and nn's quantized kernels that
    # it times, lazily
    "hardware": {"nn", "errors"},
    "nn": {"kinds", "spec", "devices"} | PURE,
    "weights": {"nn", "kinds", "spec", "devices"} | PURE,
    "measure": {"nn", "estimate", "weights", "kinds", "spec", "devices", "hardware"} | PURE,
    # torch.distributed: the model sharded over ranks, measured against estimate's plan
    "distributed": {"nn", "estimate", "measure", "weights", "kinds", "spec", "devices"} | PURE,
    "claims": {"estimate", "kinds", "spec"} | PURE,
    "report": {"estimate", "measure", "claims", "kinds", "spec", "hardware"} | PURE,
    # the Python API: the analytic commands' code, which the CLI calls (no torch)
    "api": {"estimate", "spec", "hardware"} | PURE,
    "cli": ANY,
}


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(root: Path = ROOT) -> dict[str, Path]:
    return {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def _is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules[name].name == "__init__.py"


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _contains(package: str, module: str) -> bool:
    return module == package or module.startswith(package + ".")


def _dynamic(node: ast.Call, modules: dict[str, Path]) -> list[str]:
    """Targets of `importlib.import_module(<literal>)` or `(f"archscope.p.{name}")`."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called != "import_module" or not node.args:
        return []
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value] if _contains(PACKAGE, arg.value) else []
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        prefix = arg.values[0].value
        if _contains(PACKAGE, prefix.rstrip(".")) and prefix.endswith("."):
            return [m for m in modules if m.startswith(prefix) and "." not in m[len(prefix):]]
    return []


def _imports(name: str, path: Path, modules: dict[str, Path]):
    """(line, explicit target) for every import of an archscope module in `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = name if _is_package(name, modules) else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for target in _dynamic(node, modules):
                yield node.lineno, target
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _contains(PACKAGE, alias.name):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not _contains(PACKAGE, source):
                continue
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                yield node.lineno, sub if sub in modules else source


def import_graph(root: Path = ROOT) -> tuple[dict[str, set[str]], list[tuple[str, int, str]]]:
    """The module graph (with implicit parent edges) and each explicit import as found."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    found = []
    for name, path in modules.items():
        for line, target in _imports(name, path, modules):
            found.append((name, line, target))  # a missing target is other tests' business
            implicit = [p for p in _parents(target) if not _contains(p, name)]
            graph[name].update(t for t in [target, *implicit] if t != name)
    for targets in list(graph.values()):
        for t in targets:
            graph.setdefault(t, set())
    return graph, found


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    index, low, on_stack, stack, out = {}, {}, set(), [], []

    def visit(v):  # Tarjan; the graph is a few hundred nodes, recursion is fine
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _shortest_cycle(graph: dict[str, set[str]], start: str, within: set[str]) -> list[str]:
    previous, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & within):
                if w == start:
                    path = [v]
                    while previous[path[-1]] is not None:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if w not in previous:
                    previous[w] = v
                    nxt.append(w)
        frontier = nxt
    return []


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """For each cyclic component, the shortest cycle through each of its modules, deduplicated."""
    cycles = []
    for comp in _strongly_connected(graph):
        if len(comp) < 2:
            continue
        seen = set()
        for start in comp:
            cycle = _shortest_cycle(graph, start, set(comp))
            key = frozenset(zip(cycle, cycle[1:]))
            if cycle and key not in seen:
                seen.add(key)
                nodes = cycle[:-1]
                first = nodes.index(min(nodes))
                nodes = nodes[first:] + nodes[:first]
                cycles.append([*nodes, nodes[0]])
    return sorted(cycles)


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else PACKAGE


def test_no_import_cycle():
    graph, _ = import_graph()
    cycles = find_cycles(graph)
    assert not cycles, "import cycles (see this module's docstring for how edges are read):\n" + \
        "\n".join("  " + " -> ".join(c) for c in cycles)


def test_layers_point_one_way():
    modules = _modules()
    units = sorted({_unit(m) for m in modules} - {PACKAGE})
    missing = [u for u in units if u not in LAYERS]
    assert not missing, (f"archscope/{', archscope/'.join(missing)} not in LAYERS in "
                         f"{__file__}: add a row saying which units it may import")
    problems = []
    _, found = import_graph()
    for importer, line, target in found:
        source, dest = _unit(importer), _unit(target)
        allowed = LAYERS[source]
        if dest in (source, PACKAGE) or allowed == ANY or dest in allowed:
            continue
        problems.append(f"  {modules[importer].relative_to(ROOT.parent)}:{line}: {importer} "
                        f"imports {target} ({source} -> {dest} is not allowed; {source} may "
                        f"import {', '.join(sorted(allowed)) or 'nothing'})")
    assert not problems, "imports against the layer order:\n" + "\n".join(problems)


def test_the_layer_table_is_itself_one_way():
    table = {u: set() if a == ANY else set(a) for u, a in LAYERS.items()}
    unknown = sorted({d for deps in table.values() for d in deps} - set(table))
    assert not unknown, f"LAYERS names units it does not define: {unknown}"
    cycles = find_cycles(table)
    assert not cycles, "LAYERS allows a cycle:\n" + "\n".join("  " + " -> ".join(c)
                                                             for c in cycles)


def _lines(path: Path) -> int:
    data = path.read_bytes()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def test_no_file_over_the_line_limit():
    long = sorted(((p.relative_to(ROOT.parent), _lines(p)) for p in ROOT.rglob("*.py")
                   if _lines(p) > MAX_LINES), key=lambda item: -item[1])
    assert not long, f"files over {MAX_LINES} lines (split them):\n" + \
        "\n".join(f"  {path}: {n} lines" for path, n in long)


def test_the_cycle_finder_reports_a_package_init_cycle():
    graph = {"archscope.spec": {"archscope.spec.hf"}, "archscope.spec.hf": {"archscope.spec"},
             "archscope.nn": set()}
    assert find_cycles(graph) == [["archscope.spec", "archscope.spec.hf", "archscope.spec"]]


def test_the_edge_rules_on_a_small_tree(tmp_path):
    files = {
        "__init__.py": "",
        "spec/__init__.py": "from archscope.spec.schema import X\nfrom . import hf\n",
        "spec/schema.py": "from archscope.spec import fields\nX = 1\n",
        "spec/fields.py": "",
        "spec/hf.py": "def lazy():\n    from archscope.spec import X\n",
        "measure/__init__.py": "",
        "measure/run.py": "import archscope.spec.fields\nimport torch\n",
        "measure/x.py": """
            import importlib
            from .run import y
            importlib.import_module("archscope.spec.schema")
        """,
    }
    for name, text in files.items():
        path = tmp_path / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    graph, _ = import_graph(tmp_path / PACKAGE)
    assert graph == {
        "archscope": set(),
        "archscope.spec": {"archscope.spec.schema", "archscope.spec.hf"},
        "archscope.spec.schema": {"archscope.spec.fields"},  # its own package is not an edge
        "archscope.spec.fields": set(),
        "archscope.spec.hf": {"archscope.spec"},  # `from package import name`: the __init__
        "archscope.measure": set(),
        "archscope.measure.run": {"archscope.spec.fields", "archscope.spec"},  # + the parent
        "archscope.measure.x": {"archscope.measure.run", "archscope.spec.schema", "archscope.spec"},
    }
    assert find_cycles(graph) == [["archscope.spec", "archscope.spec.hf", "archscope.spec"]]


# -- families: one home each ---------------------------------------------------------------------

FAMILIES_DIR = ROOT / "spec" / "families"
_MUTATORS = {"update", "setdefault", "append", "extend", "insert", "pop", "clear"}


def _imported_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def _patches_an_import(tree: ast.Module) -> list[int]:
    """Lines of module-level statements that change a table imported from another module:
    `TABLE[k] = v`, `TABLE.update(...)` and the like, on an imported name."""
    imported, lines = _imported_names(tree), []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                    and target.value.id in imported:
                lines.append(node.lineno)
        call = node.value if isinstance(node, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                and call.func.attr in _MUTATORS and isinstance(call.func.value, ast.Name) \
                and call.func.value.id in imported:
            lines.append(node.lineno)
    return lines


def test_a_family_is_declared_in_one_place():
    """Every transformers family archscope reads is declared by one module of
    archscope/spec/families/ (the registry refuses a second declaration), and no other module
    of the package names a model_type: reader, exporter, weight mapping and claims find a
    family only through the registry. (A model_type that is also a preset's name, gpt2, may
    stand for the preset; one that is also a component kind's name, mamba2, for the kind.)"""
    from archscope.kinds import registry as kinds
    from archscope.spec import preset_names
    from archscope.spec.families.registry import declared_in, families

    table = families()
    assert len(table) >= 25
    for model_type, family in table.items():
        assert family.model_type == model_type
        module = FAMILIES_DIR / f"{declared_in(model_type)}.py"
        assert module.is_file(), model_type
    presets = set(preset_names()) | set(kinds.ATTENTION) | set(kinds.FFN) | set(kinds.MIXER)
    named = []
    for path in sorted(ROOT.rglob("*.py")):
        if FAMILIES_DIR in path.parents:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named += [f"{path.relative_to(ROOT.parent)}:{node.lineno}: {node.value!r}"
                  for node in ast.walk(tree) if isinstance(node, ast.Constant)
                  and isinstance(node.value, str) and node.value in table
                  and node.value not in presets]
    assert not named, "model types named outside archscope/spec/families/:\n" + \
        "\n".join("  " + n for n in named)


def test_no_module_patches_another_modules_table_at_import_time():
    patched = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        patched += [f"{path.relative_to(ROOT.parent)}:{line}" for line in _patches_an_import(tree)]
    assert not patched, "module-level changes to an imported table:\n" + \
        "\n".join("  " + p for p in patched)


def test_the_patch_finder_finds_a_patch():
    tree = ast.parse("from m import TABLE, other\nTABLE['x'] = 1\nother.update(y=2)\n"
                     "mine = {}\nmine['k'] = 3\n")
    assert _patches_an_import(tree) == [2, 3]


def test_the_registry_refuses_a_family_declared_twice(monkeypatch):
    import pkgutil

    from archscope.spec.families import registry

    real = pkgutil.iter_modules
    twice = lambda path: [m for m in real(path) if m.name == "mistral"] * 2  # noqa: E731
    monkeypatch.setattr(registry.pkgutil, "iter_modules", twice)
    registry._declared.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="'mistral' is declared by both"):
            registry.families()
    finally:
        monkeypatch.undo()
        registry._declared.cache_clear()


def test_test_modules_have_unique_names():
    """tests/ has no __init__.py, so pytest imports each test module by its bare name: two
    test files of one name in different folders stop the whole run at collection."""
    tests = Path(__file__).parent
    seen: dict[str, Path] = {}
    clashes = []
    for path in sorted(tests.rglob("test_*.py")):
        if path.name in seen:
            clashes.append(f"{seen[path.name].relative_to(tests)} and {path.relative_to(tests)}")
        seen.setdefault(path.name, path)
    assert not clashes, clashes
