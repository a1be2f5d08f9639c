"""A jaxpr as a dataflow graph: input, equation and output nodes, shape-labelled edges, and a
cluster for each equation holding nested jaxprs (jit, cond branches, scan and while bodies,
custom rules, pmap), each nested jaxpr a subgraph of its own.

Only structure and cost live here; ``layout`` places the nodes and ``svg`` draws them.
"""
from __future__ import annotations

import numpy as np

from hlox.core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from hlox.interpreters import cost as cost_lib

_PARAM_CHARS = 30   # longest parameter text shown on a node (the tooltip has all of it)
_SHOWN_PARAMS = 2   # parameters shown on a node


class Node:
  """One box: ``kind`` is 'input', 'const', 'eqn', 'output' or 'cluster'."""

  __slots__ = ("id", "kind", "lines", "tooltip", "cost", "subgraphs", "heat", "heavy",
               "layer", "order", "x", "y", "w", "h")

  def __init__(self, id, kind, lines, tooltip="", cost=None, subgraphs=()):
    self.id = id
    self.kind = kind
    self.lines = lines
    self.tooltip = tooltip
    self.cost = cost
    self.subgraphs = list(subgraphs)   # [(label, Graph)] for a cluster
    self.heat = 0.0                    # 0..1, this node's flops over the heaviest node's
    self.heavy = False
    self.layer = self.order = 0
    self.x = self.y = self.w = self.h = 0.0


class Edge:
  """``src -> dst`` carrying one value, labelled with its type (``f32[3,4]``)."""

  __slots__ = ("src", "dst", "label", "tooltip", "via")

  def __init__(self, src, dst, label, tooltip=""):
    self.src, self.dst, self.label, self.tooltip = src, dst, label, tooltip
    self.via = []   # (x, y_top, y_bottom) of the rows a long edge passes, set by the layout


class Graph:
  """The nodes and edges of one jaxpr (nested jaxprs are graphs held by cluster nodes)."""

  __slots__ = ("nodes", "edges", "w", "h", "ox", "oy")

  def __init__(self):
    self.nodes: list[Node] = []
    self.edges: list[Edge] = []
    self.w = self.h = 0.0
    self.ox = self.oy = 0.0   # top-left corner inside the cluster that holds it

  def walk(self):
    """Every node, nested ones included, depth first."""
    for n in self.nodes:
      yield n
      for _, g in n.subgraphs:
        yield from g.walk()

  def walk_edges(self):
    yield from self.edges
    for n in self.nodes:
      for _, g in n.subgraphs:
        yield from g.walk_edges()


class _Namer:
  """Variable names a, b, ..., z, ba, ... as the jaxpr printer makes them up."""

  def __init__(self):
    self.names = {}

  def __call__(self, v) -> str:
    if type(v) is Literal:
      return v.pretty()
    name = self.names.get(v)
    if name is None:
      n, name = len(self.names), ""
      while True:
        name = "abcdefghijklmnopqrstuvwxyz"[n % 26] + name
        n //= 26
        if n == 0:
          break
      self.names[v] = name
    return name


def cluster_title(n) -> str:
  """The one-line heading of a cluster: primitive, shown params and the total cost."""
  return f"{' '.join(n.lines)} · {format_cost(n.cost)}"


def format_cost(c) -> str:
  return f"{_si(c.flops)}FLOP · {_si(c.bytes)}B"


def _si(x) -> str:
  for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
    if x >= scale:
      return f"{x / scale:.3g} {unit}"
  return f"{x:.3g} "


def _short(value) -> str:
  if isinstance(value, np.dtype):
    text = value.name
  elif isinstance(value, type) and issubclass(value, np.generic):
    text = np.dtype(value).name
  elif callable(value) and hasattr(value, "__name__"):
    text = value.__name__
  else:
    text = str(value)
  text = " ".join(text.split())
  return text if len(text) <= _PARAM_CHARS else text[:_PARAM_CHARS - 1] + "…"


def _printable_params(eqn) -> dict:
  params = eqn.primitive.params_for_printing(eqn.params)
  return {k: v for k, v in params.items()
          if not isinstance(v, (Jaxpr, ClosedJaxpr))
          and not (isinstance(v, (tuple, list)) and any(isinstance(x, (Jaxpr, ClosedJaxpr))
                                                        for x in v))}


def _eqn_lines(eqn) -> tuple[list[str], str]:
  params = _printable_params(eqn)
  # Unset options say little on a small box; the tooltip keeps every parameter.
  shown = [f"{k}={_short(v)}" for k, v in params.items()
           if not (v is None or v is False or (type(v) is int and v == 0)
                   or (isinstance(v, tuple) and not v))
           ][:_SHOWN_PARAMS]
  tooltip = eqn.primitive.name + "".join(f"\n  {k}={_short(v)}" for k, v in params.items())
  if eqn.source_info is not None:
    tooltip += f"\n{eqn.source_info}"
  return [eqn.primitive.name, *shown], tooltip


class _Builder:
  def __init__(self):
    self.names = _Namer()
    self.count = 0
    self.types = {}

  def type_of(self, v) -> str:
    # Printing an aval is the dearest part of building a big graph; avals repeat a lot.
    t = self.types.get(v.aval)
    if t is None:
      t = self.types[v.aval] = v.aval.str_short()
    return t

  def new_id(self, prefix) -> str:
    self.count += 1
    return f"{prefix}{self.count}"

  def build(self, jaxpr: Jaxpr, consts=None) -> Graph:
    g = Graph()
    producer = {}   # Var -> node id of its producer
    nodes_by_id = {}

    def add(node):
      g.nodes.append(node)
      nodes_by_id[node.id] = node
      return node

    def wire(v, dst):
      if type(v) is Literal:
        return
      src = producer.get(v)
      if src is None:   # a free variable (should not happen in a well-formed jaxpr)
        return
      t = self.type_of(v)
      g.edges.append(Edge(src, dst, t, f"{self.names(v)}: {t}"))

    for i, v in enumerate(jaxpr.constvars):
      value = consts[i] if consts is not None and i < len(consts) else None
      extra = f"\n{_short(value)}" if value is not None and np.size(value) <= 16 else ""
      node = add(Node(self.new_id("k"), "const", [f"{self.names(v)}: const"],
                      f"constant {self.names(v)}:{v.aval.str_short()}{extra}"))
      producer[v] = node.id
    for v in jaxpr.invars:
      node = add(Node(self.new_id("i"), "input", [self.names(v)],
                      f"input {self.names(v)}:{v.aval.str_short()}"))
      producer[v] = node.id

    for eqn in jaxpr.eqns:
      lines, tooltip = _eqn_lines(eqn)
      nested = cost_lib.nested_jaxprs(eqn.params)
      c = cost_lib.eqn_cost(eqn)
      outs = " ".join(f"{self.names(v)}:{self.type_of(v)}" for v in eqn.outvars)
      tooltip = f"{outs} = {tooltip}\n{format_cost(c)}"
      if nested:
        subgraphs = [(label, self.build(j)) for label, j in nested]
        node = add(Node(self.new_id("c"), "cluster", lines, tooltip, c, subgraphs))
      else:
        node = add(Node(self.new_id("e"), "eqn", lines + [format_cost(c)], tooltip, c))
      seen = set()
      for v in eqn.invars:
        if type(v) is Literal or v in seen:
          continue
        seen.add(v)
        wire(v, node.id)
      for v in eqn.outvars:
        producer[v] = node.id

    for v in jaxpr.outvars:
      label = self.names(v)
      node = add(Node(self.new_id("o"), "output", [f"out {label}"],
                      f"output {label}:{v.aval.str_short()}"))
      wire(v, node.id)
    return g


def build_graph(closed) -> Graph:
  """The graph of a ``ClosedJaxpr`` (or an open ``Jaxpr``), with per-node costs."""
  if isinstance(closed, ClosedJaxpr):
    return _Builder().build(closed.jaxpr, closed.consts)
  return _Builder().build(closed)


def mark_heat(g: Graph, heaviest: int = 3) -> None:
  """Set each equation node's ``heat`` (its flops over the maximum, for the fill colour) and
  flag the ``heaviest`` ones."""
  eqns = [n for n in g.walk() if n.kind == "eqn"]
  top = max((n.cost.flops for n in eqns), default=0.0)
  if top <= 0:
    return
  for n in eqns:
    n.heat = n.cost.flops / top
  for n in eqns:
    n.heavy = False
  for n in sorted(eqns, key=lambda n: -n.cost.flops)[:heaviest]:
    n.heavy = n.cost.flops > 0
