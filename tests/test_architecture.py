"""The house rules, checked: one-way dependencies between hlox's rooms and no import circles.

Every ``import`` in the package is read with ``ast`` (function-local ones included: a circle
hidden inside a function is still a circle) and checked against the layering written down in
``docs/ARCHITECTURE.md``. The checker is also fed small fake packages, so it is shown to fail
when a forbidden import or a circle is added.
"""
from __future__ import annotations

import ast
import pathlib
import textwrap
from dataclasses import dataclass

import pytest

PACKAGE_DIR = pathlib.Path(__file__).resolve().parent.parent / "hlox"

# The layers, top to bottom. A module may import modules of its own layer or of a layer below,
# never of a layer above. Names are module prefixes ("hlox.lax" covers hlox.lax.*).
LAYERS = [
    ["hlox.fastmath"],                      # backend-switching math API, on the public API
    ["hlox", "hlox.__main__", "hlox.distributed"],            # the public package
    ["hlox.nn", "hlox.scipy", "hlox.image", "hlox.flatten_util", "hlox.test_util",
     "hlox.debug", "hlox.profiler", "hlox.viz", "hlox.sharding", "hlox.experimental",
     "hlox.export",
     "hlox.dtypes", "hlox.ops", "hlox.ref", "hlox.extend", "hlox.dlpack", "hlox.stages", "hlox.ffi",
     "hlox.memory", "hlox.example_libraries", "hlox.tools", "hlox.lib",
     "hlox._src", "hlox.api_util"],  # JAX-private names that libraries built on JAX import
    ["hlox.random"],                                         # PRNG and distributions
    ["hlox.numpy"],                                          # the NumPy API on lax
    ["hlox.api", "hlox.autodiff", "hlox.custom_derivatives",  # user-facing transformations
     "hlox.custom_batching", "hlox.checkpoint", "hlox.ad_checkpoint", "hlox.typing"],
    ["hlox.lax"],                                            # every primitive with its rules
    ["hlox.interpreters"],                                   # generic machines, rule tables
    ["hlox.runtime"],                                        # PJRT client, devices, Array
    ["hlox.cache", "hlox.monitoring", "hlox.tree_util", "hlox._tree_transform",
     "hlox.tree"],  # shared utilities
    ["hlox.core"],                                           # avals, dtypes, traces, jaxprs
    ["hlox.config", "hlox.errors", "hlox.version"],          # knows nothing of the rest
]

# Libraries written on lax see the runtime only through the Array type.
ARRAY_TYPE_ONLY = ("hlox.numpy", "hlox.random", "hlox.nn", "hlox.scipy", "hlox.fastmath")
ARRAY_MODULE = "hlox.runtime.array"

# Who may import jaxlib: the runtime (PJRT, transfers, FFI targets) for everything; the
# lowering (interpreters and the per-primitive lowering rules in lax) for the MLIR builders;
# tree_util for jaxlib's C++ pytree registry.
JAXLIB_ANY = ("hlox.runtime", "hlox.tree_util")
JAXLIB_MLIR_ONLY = ("hlox.interpreters", "hlox.lax")


@dataclass(frozen=True)
class Edge:
  source: str   # importing module
  target: str   # imported module (an hlox module, or the top-level name of another package)
  line: int
  local: bool   # inside a function or class body

  def __str__(self):
    where = " (function-local)" if self.local else ""
    return f"{self.source} -> {self.target} at line {self.line}{where}"


def module_names(root: pathlib.Path, package: str = "hlox") -> dict[str, pathlib.Path]:
  """Dotted module name of every ``.py`` file under ``root`` (a package's ``__init__`` is the
  package itself)."""
  names = {}
  for path in sorted(root.rglob("*.py")):
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
      parts.pop()
    names[".".join(parts)] = path
  return names


def _resolve(name: str, modules) -> str | None:
  """The longest prefix of ``name`` that is a module of the package (``hlox.lax.shapes.reshape``
  -> ``hlox.lax.shapes``)."""
  while name:
    if name in modules:
      return name
    name = name.rpartition(".")[0]
  return None


class _ImportCollector(ast.NodeVisitor):
  def __init__(self):
    self.found = []  # (dotted name or (base, [names]), level, line, local)
    self._depth = 0

  def _scoped(self, node):
    self._depth += 1
    self.generic_visit(node)
    self._depth -= 1

  visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = _scoped

  def visit_Import(self, node):
    for alias in node.names:
      self.found.append((alias.name, (), 0, node.lineno, self._depth > 0))

  def visit_ImportFrom(self, node):
    names = tuple(alias.name for alias in node.names)
    self.found.append((node.module or "", names, node.level, node.lineno, self._depth > 0))


def import_edges(root: pathlib.Path, package: str = "hlox") -> list[Edge]:
  """Every import in the package under ``root``, resolved to the module it loads."""
  modules = module_names(root, package)
  edges = []
  for module, path in modules.items():
    collector = _ImportCollector()
    collector.visit(ast.parse(path.read_text(), filename=str(path)))
    is_package = path.name == "__init__.py"
    for name, names, level, line, local in collector.found:
      if level:  # relative import: resolve against this module's package
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - level + 1]
        name = ".".join(base + ([name] if name else []))
      if name != package and not name.startswith(package + "."):
        edges.append(Edge(module, name.split(".")[0] if not name.startswith("jaxlib")
                          else name, line, local))
        continue
      # `from pkg import sub` loads pkg.sub when sub is a module, else pkg itself.
      targets = {_resolve(f"{name}.{n}", modules) if f"{name}.{n}" in modules
                 else _resolve(name, modules) for n in names} or {_resolve(name, modules)}
      for target in targets:
        if target and target != module:
          edges.append(Edge(module, target, line, local))
  return edges


def _layer_of(module: str) -> int | None:
  best, best_len = None, -1
  for index, prefixes in enumerate(LAYERS):
    for prefix in prefixes:
      if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
        # "hlox" itself only matches the package module, not everything under it.
        if prefix == "hlox" and module != "hlox":
          continue
        best, best_len = index, len(prefix)
  return best


def _under(module: str, prefixes) -> bool:
  return any(module == p or module.startswith(p + ".") for p in prefixes)


def layering_violations(edges) -> list[str]:
  """Imports that point up the layers, or reach past the Array type or into jaxlib."""
  problems = []
  for edge in edges:
    if edge.target == "jax":
      problems.append(f"{edge}: hlox never imports jax")
      continue
    if edge.target.startswith("jaxlib"):
      mlir = edge.target.startswith("jaxlib.mlir")
      if not (_under(edge.source, JAXLIB_ANY) or (mlir and _under(edge.source,
                                                                  JAXLIB_MLIR_ONLY))):
        problems.append(f"{edge}: only the runtime and the lowering touch jaxlib")
      continue
    if not edge.target.startswith("hlox"):
      continue
    source_layer, target_layer = _layer_of(edge.source), _layer_of(edge.target)
    if source_layer is None or target_layer is None:
      unknown = edge.source if source_layer is None else edge.target
      problems.append(f"{edge}: {unknown} belongs to no layer (add it to LAYERS and "
                      "docs/ARCHITECTURE.md)")
    elif target_layer < source_layer:
      problems.append(f"{edge}: points up the layers")
    if (_under(edge.source, ARRAY_TYPE_ONLY) and _under(edge.target, ("hlox.runtime",))
        and edge.target != ARRAY_MODULE):
      problems.append(f"{edge}: libraries see the runtime only through {ARRAY_MODULE}")
  return problems


def import_cycles(edges) -> list[list[str]]:
  """The strongly connected components (of more than one module) of the import graph."""
  graph = {}
  for edge in edges:
    if edge.target.startswith("hlox"):
      graph.setdefault(edge.source, set()).add(edge.target)
  index, low, stack, on_stack, cycles = {}, {}, [], set(), []
  counter = [0]

  def visit(v):  # Tarjan's algorithm, iterative enough for a few hundred modules
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on_stack.add(v)
    for w in sorted(graph.get(v, ())):
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on_stack:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      component = []
      while True:
        w = stack.pop()
        on_stack.discard(w)
        component.append(w)
        if w == v:
          break
      if len(component) > 1:
        cycles.append(sorted(component))

  for v in sorted(graph):
    if v not in index:
      visit(v)
  return cycles


def _cycle_report(cycles, edges) -> str:
  lines = []
  for component in cycles:
    members = set(component)
    lines.append("circle: " + ", ".join(component))
    lines += [f"  {e}" for e in edges if e.source in members and e.target in members]
  return "\n".join(lines)


# --- the package itself -------------------------------------------------------------------

def test_layers_point_downward():
  problems = layering_violations(import_edges(PACKAGE_DIR))
  assert not problems, "\n".join(problems)


def test_no_import_circles():
  edges = import_edges(PACKAGE_DIR)
  cycles = import_cycles(edges)
  assert not cycles, _cycle_report(cycles, edges)


def test_every_folder_says_what_belongs_there():
  for init in sorted(PACKAGE_DIR.rglob("__init__.py")):
    doc = ast.get_docstring(ast.parse(init.read_text()))
    assert doc and len(doc.split()) >= 12, f"{init} needs a module docstring saying what " \
                                           "belongs in the folder and what it may import"


# --- the checker fails when it should -----------------------------------------------------

def _fake_package(tmp_path, files: dict[str, str]) -> pathlib.Path:
  root = tmp_path / "hlox"
  for name, text in files.items():
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
  return root


def test_checker_catches_a_function_local_upward_import(tmp_path):
  root = _fake_package(tmp_path, {
      "__init__.py": "", "core/__init__.py": "", "lax/__init__.py": "",
      "core/tracer.py": """
          def helper():
            from hlox.lax import shapes  # core reaching up into lax
            return shapes
      """,
      "lax/shapes.py": "from hlox.core import tracer\n",
  })
  problems = layering_violations(import_edges(root))
  assert len(problems) == 1
  assert "hlox.core.tracer -> hlox.lax.shapes" in problems[0]
  assert "function-local" in problems[0] and "points up" in problems[0]


def test_checker_catches_jaxlib_and_runtime_reach(tmp_path):
  root = _fake_package(tmp_path, {
      "__init__.py": "", "numpy/__init__.py": "", "runtime/__init__.py": "",
      "runtime/client.py": "from jaxlib import xla_client\n",
      "runtime/array.py": "",
      "numpy/ufuncs.py": """
          from hlox.runtime.array import Array       # allowed: the Array type
          from hlox.runtime import client            # not allowed
          from jaxlib.mlir import ir                 # not allowed in numpy
          import jax                                  # never
      """,
  })
  problems = layering_violations(import_edges(root))
  assert len(problems) == 3, problems
  assert any("hlox.runtime.client" in p and "Array" not in p.split(":")[0] for p in problems)
  assert any("jaxlib.mlir" in p for p in problems)
  assert any("never imports jax" in p for p in problems)


def test_checker_catches_circles_through_functions_and_packages(tmp_path):
  root = _fake_package(tmp_path, {
      "__init__.py": "",
      "lax/__init__.py": "from hlox.lax.shapes import *\n",
      "lax/shapes.py": "def f():\n  from hlox.lax import elementwise\n",
      "lax/elementwise.py": "from hlox.lax.shapes import f\n",
      "lax/dot.py": "from hlox import lax\n",
  })
  edges = import_edges(root)
  cycles = import_cycles(edges)
  assert ["hlox.lax.elementwise", "hlox.lax.shapes"] in cycles
  # A submodule importing its own package closes a circle through the package's __init__
  # only when the __init__ imports it back; here it does not.
  assert not any("hlox.lax.dot" in c for c in cycles)
  assert "function-local" in _cycle_report(cycles, edges)


def test_checker_resolves_relative_and_submodule_imports(tmp_path):
  root = _fake_package(tmp_path, {
      "__init__.py": "", "lax/__init__.py": "from . import shapes\n",
      "lax/shapes.py": "from .utils import helper\nfrom ..core import avals\n",
      "lax/utils.py": "", "core/__init__.py": "", "core/avals.py": "",
  })
  targets = {(e.source, e.target) for e in import_edges(root)}
  assert ("hlox.lax", "hlox.lax.shapes") in targets
  assert ("hlox.lax.shapes", "hlox.lax.utils") in targets
  assert ("hlox.lax.shapes", "hlox.core.avals") in targets


if __name__ == "__main__":  # print the whole report: python tests/test_architecture.py
  all_edges = import_edges(PACKAGE_DIR)
  print("\n".join(layering_violations(all_edges)) or "layers: ok")
  print(_cycle_report(import_cycles(all_edges), all_edges) or "circles: none")
  pytest.main([__file__, "-q"])
