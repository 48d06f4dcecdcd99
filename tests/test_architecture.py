"""The package's architecture, read from its import statements: no module
imports another in a circle, and each layer imports only the layers below it
(the order is the one the package's own docstring, ``cdl/__init__.py``,
gives; each subpackage's docstring says what it may import).

Every import counts: at the top of a module, inside a function, and under
``if TYPE_CHECKING:`` (an annotation is a dependency too). The graph is built
from the installed package's source files, which are what users run.

The tests are held to the same rule from outside: those in ``tests/`` import
only the public modules, and the tests of internals live in
``tests/internals/`` (its ``__init__.py`` says what belongs there).
"""

from __future__ import annotations

import ast
from pathlib import Path

import cdl

PACKAGE = Path(cdl.__file__).resolve().parent

#: The layers, lowest first. A module's layer is its subpackage (or, for a
#: module directly in the package, its own name).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("text",),
    ("model",),
    ("loading",),
    ("resolution",),
    ("planning",),
    ("deployment",),
    ("engine",),
    ("__init__", "validate", "conformance"),
    ("lsp",),
    ("cli",),
    ("__main__",),
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str) -> set[str]:
    """The cdl modules ``path`` (module ``name``) imports, by absolute name."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "cdl")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "cdl":
                continue
            for alias in node.names:  # `from . import module` names a module
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in MODULES else target)
    found.discard(name)
    return found


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
GRAPH = {name: _imports(path, name) for name, path in MODULES.items()}


def _layer(module: str) -> str:
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def test_every_module_has_a_layer() -> None:
    assert {m for m in MODULES if _layer(m) not in RANK} == set()


def test_no_import_cycles() -> None:
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done
    for start in sorted(GRAPH):
        if start in state:
            continue
        path: list[str] = [start]
        stack = [iter(sorted(GRAPH[start]))]
        state[start] = 1
        while stack:  # an explicit depth-first walk
            step = next(stack[-1], None)
            if step is None:
                state[path.pop()] = 2
                stack.pop()
            elif step not in GRAPH or state.get(step) == 2:
                continue
            elif state.get(step) == 1:
                cycles.append(path[path.index(step) :] + [step])
            else:
                state[step] = 1
                path.append(step)
                stack.append(iter(sorted(GRAPH[step])))
    assert cycles == [], "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_layers_import_only_downward() -> None:
    upward = sorted(
        f"{module} ({_layer(module)}) imports {target} ({_layer(target)})"
        for module, targets in GRAPH.items()
        for target in targets
        if target in MODULES and RANK[_layer(target)] > RANK[_layer(module)]
    )
    assert upward == []


def test_each_subpackage_says_what_it_holds_and_may_import() -> None:
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "May import" in doc, f"{init.parent.name}/__init__.py must say what the layer may import"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def _private_uses(path: Path) -> list[str]:
    """The private names (``_x``, not ``__x__``) ``path`` imports from other
    modules, and the private attributes it reads of anything but ``self``
    (lxml's ``etree._Element`` is the element type it documents)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            found += [f"{node.module or '.'}.{alias.name}" for alias in node.names if _private(alias.name)]
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls", "etree")):
                found.append(f"line {node.lineno}: .{node.attr}")
    return found


def test_the_language_server_uses_the_engine_through_one_module_and_public_names() -> None:
    """``cdl lsp`` takes every name of the layers below in ``lsp/_engine.py``
    (its interface to the engine), and no module of it imports a private name
    or reads another object's private attribute."""
    interface = "cdl.lsp._engine"
    server = {name for name in MODULES if name == "cdl.lsp" or name.startswith("cdl.lsp.")}
    beside = sorted(
        f"{module} imports {target}"
        for module in server - {interface}
        for target in GRAPH[module]
        if target not in server
    )
    assert beside == []
    private = sorted(f"{module}: {name}" for module in server for name in _private_uses(MODULES[module]))
    assert private == []


# ---------------------------------------------------------------------------
# The tests: those in tests/ use what users use; tests/internals/ looks inside

TESTS = Path(__file__).resolve().parent

#: What users may import (README.md): the package, its errors, validation, the
#: conformance suite, and the command (``cdl.cli``, run as ``cdl``).
PUBLIC_MODULES = {"cdl", "cdl.errors", "cdl.validate", "cdl.conformance", "cdl.cli"}


def _imported_by_test(path: Path) -> set[str]:
    """The modules a test file imports that are cdl's, or the internals' helpers."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            module = node.module or ""
            names = [module] + [f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in MODULES]
        else:
            names = []
        found.update(name for name in names if name.split(".")[0] in ("cdl", "internals", "inside"))
    return found


def test_the_tests_outside_internals_use_only_the_public_modules() -> None:
    private = sorted(
        f"{path.relative_to(TESTS)} imports {name}"
        for path in TESTS.glob("*.py")
        for name in _imported_by_test(path)
        if name not in PUBLIC_MODULES
    )
    assert private == [], "move these tests to tests/internals/ or test through the public API:\n" + "\n".join(private)
    assert (TESTS / "internals" / "inside.py").is_file()


#: The longest a class and a function may be, in lines (the developers' guide:
#: classes under 450 lines, functions of 80 at most).
CLASS_LINES, FUNCTION_LINES = 449, 80


def test_classes_and_functions_stay_short() -> None:
    """Every class of the package is under 450 lines and every function at
    most 80 (a session and its state are two classes, not one of 750 lines)."""
    long: list[str] = []
    for name, path in sorted(MODULES.items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                limit = CLASS_LINES if isinstance(node, ast.ClassDef) else FUNCTION_LINES
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    long.append(f"{name}:{node.lineno} {node.name}: {lines} lines (at most {limit})")
    assert not long, "\n".join(long)
