"""The import contract: a module imports only the layers below it, and only their published names.

The layer map is `tests/architecture/layers.toml`. There are no exceptions: any finding fails
the suite (the allow-list of the first session's findings was emptied and removed; do not bring
it back, fix the code or, for a rule the map should state, state it in layers.toml).

Every import of npurt's own modules is read from the source (nothing is imported), at module
level and inside functions alike. The findings:

- ``circle: A -> B``    the import A -> B lies on an import circle (counting the imports that run:
                        not those under `if TYPE_CHECKING:`)
- ``upward: A -> B``    A imports B, which sits on a higher floor
- ``private: A -> B``   A, outside npurt.runtime, imports B, a runtime name not in its `__all__`
- ``lazy: A -> B``      A imports B, one of npurt's own modules, inside a function (except the
                        [lazy] cases of layers.toml: B needs an optional extra, or A defers npurt)
- ``reach: A -> X._y``  A, outside npurt.runtime, reads a private attribute of a runtime object
- ``sysmodules: A``     A reaches an npurt module through `sys.modules` (by name, or by scanning it):
                        an import the contract cannot see (the apps floor may alias modules)
- ``byname: A``         A loads modules by name (`importlib.import_module`, `__import__`) but the
                        map's [loads] does not name the table it loads them from
- ``unlisted: A -> B``  A loads B by name but B is not in the table [loads] names for A (or B,
                        in A's [offers] table, is not a submodule of the package A)

Loading by name is allowed in one shape only: the module-level table that [loads] names for the
module (a dict or tuple literal of module names, absolute or relative to the module's package)
lists every npurt module it loads, and each entry counts as an import made when the module runs
(it is checked for floors and circles like a written import; it is not "lazy": the table says in
one place what is loaded). The CLI loads the module of the command being run this way, so that
each command pays only for the layers it uses. A package may also offer some of its own
submodules as attributes loaded on first use (PEP 562: `npurt.acl` after `import npurt`), the
binding `import npurt.acl` makes anyway: the table [offers] names for it lists them, each must
be a submodule of that package, and they are not imports of the package (it uses none of them).

Run ``python tests/test_architecture.py`` to print the findings, one a line.
"""
from __future__ import annotations

import ast
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
HERE = Path(__file__).resolve().parent / "architecture"
LAYERS = tomllib.loads((HERE / "layers.toml").read_text())
APPS_FLOOR = LAYERS["floors"]["npurt.apps"]   # processes may alias modules (npurt run)


@dataclass(frozen=True)
class Import:
    importer: str          # dotted name of the importing module
    target: str            # dotted name of the npurt module imported
    names: tuple           # names taken from target by `from target import ...` (empty for `import`)
    in_function: bool      # made inside a def (runs when the function is called)
    type_only: bool        # under `if TYPE_CHECKING:` (never runs)
    line: int


def module_files() -> dict[str, Path]:
    """Every module of the npurt package, by dotted name (a package by its own name)."""
    modules = {}
    for path in sorted((SRC / "npurt").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = module_files()


def is_package(name: str) -> bool:
    return MODULES.get(name, Path()).name == "__init__.py"


def floor_key(name: str) -> str:
    """The name a module is looked up by in the map: a package is looked up as `pkg.__init__`."""
    return name + ".__init__" if is_package(name) else name


def floor_of(name: str) -> tuple[int, str]:
    key = floor_key(name)
    best = None
    for room in LAYERS["floors"]:
        if key == room or key.startswith(room + "."):
            if best is None or len(room) > len(best):
                best = room
    if best is None:
        raise AssertionError(f"{name} has no room in tests/architecture/layers.toml: add it")
    return LAYERS["floors"][best], best


def _resolve_from(importer: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package(importer):
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def scan(name: str, path: Path) -> tuple[list[Import], ast.Module]:
    tree = ast.parse(path.read_text(), str(path))
    found: list[Import] = []

    def visit(node, in_function, type_only):
        for child in ast.iter_child_nodes(node):
            fn = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            tc = type_only or (isinstance(child, ast.If) and _is_type_checking(child.test))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name == "npurt" or alias.name.startswith("npurt."):
                        found.append(Import(name, alias.name, (), in_function, type_only, child.lineno))
            elif isinstance(child, ast.ImportFrom):
                base = _resolve_from(name, child)
                if base == "npurt" or base.startswith("npurt."):
                    plain = []
                    for alias in child.names:
                        sub = f"{base}.{alias.name}"
                        if sub in MODULES:   # `from pkg import submodule` imports the submodule
                            found.append(Import(name, sub, (), in_function, type_only, child.lineno))
                        else:
                            plain.append(alias.name)
                    if plain or not child.names:
                        found.append(Import(name, base, tuple(plain), in_function, type_only, child.lineno))
            visit(child, fn, tc)

    visit(tree, False, False)
    return found, tree


def runtime_surface() -> set[str]:
    """The names `npurt/runtime/__init__.py` publishes: its `__all__`, read from the source."""
    tree = ast.parse(MODULES[LAYERS["runtime"]["package"]].read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def _inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _package_aliases(name: str, tree: ast.Module, runtime: str) -> set[str]:
    """Names bound to the runtime package itself (`from npurt import runtime as rt`)."""
    aliases = set()
    parent, _, leaf = runtime.rpartition(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and _resolve_from(name, node) == parent:
            aliases.update(a.asname or a.name for a in node.names if a.name == leaf)
        elif isinstance(node, ast.Import):
            aliases.update(a.asname for a in node.names if a.name == runtime and a.asname)
    return aliases


def _unpublished_attributes(name: str, tree: ast.Module, runtime: str, surface: set[str]) -> set[str]:
    """`rt.x` through an alias of the runtime package, where x is not published."""
    aliases = _package_aliases(name, tree, runtime)
    return {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in aliases and node.attr not in surface}


def _private_reaches(name: str, tree: ast.Module, imports: list[Import], runtime: str) -> set[str]:
    """Private attributes read through names bound to runtime objects (`RUNTIME._streams`)."""
    bound = _package_aliases(name, tree, runtime)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _resolve_from(name, node)
            if _inside(base, runtime):
                bound.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if _inside(a.name, runtime) and a.asname:
                    bound.add(a.asname)
    reaches = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                chain.reverse()
                for i, attr in enumerate(chain):
                    if attr.startswith("_") and not attr.startswith("__"):
                        reaches.add(".".join([value.id] + chain[:i + 1]))
                        break
    return reaches


def _sys_modules_back_doors(tree: ast.Module) -> bool:
    """`sys.modules["npurt..."]` or a scan of `sys.modules`: a module reached without an import."""
    def is_sys_modules(node):
        return isinstance(node, ast.Attribute) and node.attr == "modules" and \
            isinstance(node.value, ast.Name) and node.value.id in ("sys", "_sys")

    def names_npurt(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value.startswith("npurt")
        if isinstance(node, ast.JoinedStr) and node.values:
            return names_npurt(node.values[0])
        return False

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and is_sys_modules(node.value) and names_npurt(node.slice):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_sys_modules(node.func.value):
            if node.func.attr in ("items", "values", "keys"):
                return True
            if node.func.attr in ("get", "pop", "setdefault") and node.args and names_npurt(node.args[0]):
                return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("list", "sorted", "iter", "dict") and node.args and is_sys_modules(node.args[0]):
            return True
    return False


def _by_name_calls(tree: ast.Module) -> list[ast.Call]:
    """`importlib.import_module(...)`, `import_module(...)` and `__import__(...)` calls."""
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "import_module") or \
                    (isinstance(f, ast.Name) and f.id in ("import_module", "__import__")):
                calls.append(node)
    return calls


def _module_named(name: str, text: str) -> str | None:
    """The npurt module `text` names: absolute, or relative to `name`'s package."""
    package = name if is_package(name) else name.rpartition(".")[0]
    for candidate in (text, f"{package}.{text}"):
        if candidate in MODULES and candidate != name:
            return candidate
    return None


def _table_modules(name: str, tree: ast.Module, table: str, section: str) -> set[str]:
    """The npurt modules named in `name`'s module-level literal table `table`: by a key or by the
    first string of a value (the rest are names in that module)."""
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == table for t in targets):
            if isinstance(node.value, ast.Dict):
                texts = [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
                for v in node.value.values:
                    first = v.elts[0] if isinstance(v, ast.Tuple) and v.elts else v
                    if isinstance(first, ast.Constant):
                        texts.append(first.value)
            elif isinstance(node.value, (ast.Tuple, ast.List)):
                texts = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
            else:
                raise AssertionError(f"{name}.{table} ([{section}] of layers.toml) is not a literal table")
            return {m for t in texts if isinstance(t, str) and (m := _module_named(name, t))}
    raise AssertionError(f"{name} has no module-level table {table!r} ([{section}] of layers.toml)")


def load_table(name: str, tree: ast.Module, section: str = "loads") -> set[str] | None:
    """The npurt modules `name` loads by name, read from the table the map's [loads] (or
    [offers]) names for it; None: the map names no table for it; an empty set: it loads only
    third-party modules."""
    key = floor_key(name)
    table = LAYERS.get(section, {}).get(key)
    if table is None:
        return None
    return _table_modules(name, tree, table, section) if table else set()


def _circle_edges(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges that lie on a circle: both ends in one strongly connected component (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, on_stack, stack, component = {}, {}, set(), [], {}
    counter = [0]

    def strongconnect(v):
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component[w] = node
                    if w == node:
                        break

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return {(a, b) for a, b in edges if component[a] == component[b] and a != b}


def _lazy_allowed(importer: str, target: str) -> bool:
    """A function-level import the map allows: of a module that needs an optional extra, or
    made by a module that defers npurt until asked (layers.toml [lazy])."""
    lazy = LAYERS.get("lazy", {})
    return any(_inside(target, m) for m in lazy.get("extras", ())) or \
        any(_inside(importer, m) for m in lazy.get("deferred", ()))


def findings() -> set[str]:
    runtime = LAYERS["runtime"]["package"]
    surface = runtime_surface()
    result: set[str] = set()
    runs: set[tuple[str, str]] = set()
    for name, path in MODULES.items():
        imports, tree = scan(name, path)
        my_floor, _ = floor_of(name)
        for imp in imports:
            if imp.target not in MODULES:
                # `import npurt.x.y` of something that is no module: the contract cannot follow it
                result.add(f"unknown: {name} -> {imp.target}")
                continue
            edge = f"{name} -> {imp.target}"
            if imp.target != name and not imp.type_only:
                runs.add((name, imp.target))
            if imp.in_function and not _lazy_allowed(name, imp.target):
                result.add(f"lazy: {edge}")
            if floor_of(imp.target)[0] > my_floor:
                result.add(f"upward: {edge}")
            if not _inside(name, runtime) and _inside(imp.target, runtime):
                if imp.target == runtime:
                    for n in imp.names:
                        if n != "*" and n not in surface:
                            result.add(f"private: {name} -> {runtime}.{n}")
                elif imp.target[len(runtime) + 1:] not in surface:
                    result.add(f"private: {edge}")
        table = load_table(name, tree)
        offered = load_table(name, tree, "offers")   # its own submodules, loaded for the caller
        calls = _by_name_calls(tree)
        if calls and table is None and offered is None:
            result.add(f"byname: {name}")
        for sub in sorted(offered or ()):
            if sub.rpartition(".")[0] != name or not is_package(name):
                result.add(f"unlisted: {name} -> {sub}")   # [offers] is for a package's own children
        for call in calls:   # a constant name must be one the tables list
            arg = call.args[0] if call.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                target = _module_named(name, arg.value)
                if target and target not in (table or set()) | (offered or set()):
                    result.add(f"unlisted: {name} -> {target}")
        for target in sorted(table or ()):
            runs.add((name, target))
            if floor_of(target)[0] > my_floor:
                result.add(f"upward: {name} -> {target}")
            if not _inside(name, runtime) and _inside(target, runtime) and \
                    target[len(runtime) + 1:] not in surface:
                result.add(f"private: {name} -> {target}")
        if not _inside(name, runtime):
            for reach in _private_reaches(name, tree, imports, runtime):
                result.add(f"reach: {name} -> {reach}")
            for attr in _unpublished_attributes(name, tree, runtime, surface):
                result.add(f"private: {name} -> {runtime}.{attr}")
        if my_floor < APPS_FLOOR and _sys_modules_back_doors(tree):
            result.add(f"sysmodules: {name}")
    for a, b in _circle_edges(runs):
        result.add(f"circle: {a} -> {b}")
    return result


def test_every_module_has_a_room_on_the_layer_map():
    for name in MODULES:
        floor_of(name)   # raises, naming the module, when the map has no room for it


def test_the_runtime_publishes_its_surface_in_all():
    import npurt.runtime as rt
    surface = runtime_surface()
    assert surface, "npurt/runtime/__init__.py defines no __all__"
    missing = sorted(n for n in surface if not hasattr(rt, n))
    assert not missing, f"npurt.runtime.__all__ names what the package does not define: {missing}"
    import types
    shadowed = sorted(n for n in surface if f"npurt.runtime.{n}" in MODULES
                      and not isinstance(getattr(rt, n), types.ModuleType))
    assert not shadowed, f"published names hide the runtime's submodules of the same name: {shadowed}"


def test_no_import_breaks_the_contract():
    found = sorted(findings())
    assert not found, ("imports that break the layer contract (tests/architecture/layers.toml); "
                       "fix the code:\n  " + "\n  ".join(found))


def test_there_is_no_allow_list():
    """The contract has no exceptions file to grow: it was emptied and removed."""
    assert not (HERE / "allowed.txt").exists(), "tests/architecture/allowed.txt is back: fix the findings instead"


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_no_module_grows_past_its_size_limit():
    """About 600 lines a module (one concept); the few documented exceptions up to their ceiling."""
    sizes = LAYERS["sizes"]
    too_big = []
    for path in MODULES.values():
        rel = str(path.relative_to(SRC / "npurt"))
        ceiling = sizes["exceptions"].get(rel, sizes["limit"])
        if _lines(path) > ceiling:
            too_big.append(f"{rel}: {_lines(path)} lines (limit {ceiling})")
    assert not too_big, ("modules over their size limit (tests/architecture/layers.toml [sizes]); split them "
                         "by concept:\n  " + "\n  ".join(too_big))


def test_every_size_exception_is_needed_and_documented():
    sizes = LAYERS["sizes"]
    page = (ROOT / "docs" / "architecture.md").read_text()
    section = page[page.index("## Module sizes"):]
    section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
    for rel in sizes["exceptions"]:
        path = SRC / "npurt" / rel
        assert path.exists(), f"[sizes.exceptions] lists {rel}, which does not exist: delete its line"
        assert _lines(path) > sizes["limit"], \
            f"{rel} is {_lines(path)} lines, within the limit: delete its line from [sizes.exceptions]"
        assert f"| `{rel}` |" in section, f"{rel} is a size exception without its row in docs/architecture.md"


def test_the_checker_sees_function_level_upward_and_circular_imports(tmp_path, monkeypatch):
    """The scanner itself: a small fake package holding one of each kind of finding."""
    pkg = tmp_path / "npurt"
    (pkg / "runtime").mkdir(parents=True)
    (pkg / "driver").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "runtime" / "__init__.py").write_text("from .stream import Stream\n__all__ = ['Stream']\n")
    (pkg / "runtime" / "stream.py").write_text("from . import scheduler\nclass Stream: pass\n")
    (pkg / "runtime" / "scheduler.py").write_text("def f():\n    from npurt.runtime import stream\n")
    (pkg / "driver" / "__init__.py").write_text("def f():\n    import npurt.runtime.stream\n")
    (pkg / "apps.py").write_text("import importlib\nTABLE = {'x': 'npurt.acl'}\n"
                                 "def f(n):\n    importlib.import_module(TABLE[n])\n"
                                 "def g():\n    importlib.import_module('npurt.driver')\n")
    (pkg / "tools.py").write_text("import importlib\ndef f():\n    importlib.import_module('npurt.acl')\n")
    (pkg / "acl.py").write_text("from npurt.runtime import Stream\nfrom npurt.runtime.stream import Stream as S\n"
                                "import npurt.runtime as _rt\nx = _rt.RUNTIME._streams\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "MODULES", module_files())
    monkeypatch.setitem(LAYERS, "loads", {"npurt.apps": "TABLE"})
    monkeypatch.setitem(LAYERS, "offers", {})
    monkeypatch.setitem(LAYERS, "floors", {**LAYERS["floors"], "npurt.apps": 5, "npurt.tools": 30})
    got = findings()
    assert {"lazy: npurt.runtime.scheduler -> npurt.runtime.stream",
            "circle: npurt.runtime.scheduler -> npurt.runtime.stream",
            "circle: npurt.runtime.stream -> npurt.runtime.scheduler",
            "upward: npurt.driver -> npurt.runtime.stream",
            "lazy: npurt.driver -> npurt.runtime.stream",
            "private: npurt.acl -> npurt.runtime.stream",
            "reach: npurt.acl -> _rt.RUNTIME._streams",
            "private: npurt.acl -> npurt.runtime.RUNTIME",
            "upward: npurt.apps -> npurt.acl",      # a table's entries are imports: floors checked
            "byname: npurt.tools",                  # a load by name with no table in [loads]
            "unlisted: npurt.apps -> npurt.driver"} <= got   # a load by name its table does not list
    assert not any(f.startswith("private: npurt.acl -> npurt.runtime.Stream") for f in got)


if __name__ == "__main__":
    now = findings()
    for line in sorted(now):
        print(line)
    kinds = {}
    for line in now:
        kinds[line.split(":")[0]] = kinds.get(line.split(":")[0], 0) + 1
    print(len(now), "findings", kinds, file=sys.stderr)
