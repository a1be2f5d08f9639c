"""A layered layout in pure Python: nodes in rows by longest path from the inputs, rows
ordered by barycentres of their neighbours, boxes pulled towards the nodes that feed them.

An edge spanning several rows gets a thin placeholder in each row it crosses, so ordering
routes it around the boxes there (Sugiyama's dummy nodes). A value used all along a long
chain would need quadratically many, so placeholders are handed out to the shortest long
edges first, up to a budget linear in the graph; the rest are drawn straight. Clusters are
laid out inside out: each nested graph first, then the cluster is one big box of the outer
graph. Everything is linear in nodes plus edges, so thousands of equations lay out in well
under a second.
"""
from __future__ import annotations

from hlox.viz.model import Graph, cluster_title

CHAR_W = 7.0      # width of one character of the 12px monospace font
LINE_H = 15.0
PAD_X, PAD_Y = 8.0, 5.0
GAP_X, GAP_Y = 18.0, 34.0   # between boxes of a row, between rows (room for edge labels)
DUMMY_W = 8.0               # the room a passing edge takes in a row
CLUSTER_PAD = 10.0
CLUSTER_HEAD = 22.0
SUB_HEAD = 18.0             # a subgraph's own title, when a cluster holds several
MARGIN = 10.0
_SWEEPS = 4
_DUMMIES_PER_NODE = 4       # the placeholder budget, per real node


class _Dummy:
  """A point a long edge passes through in one row."""

  __slots__ = ("id", "kind", "layer", "order", "x", "y", "w", "h")

  def __init__(self, id, layer):
    self.id, self.kind, self.layer, self.order = id, "dummy", layer, 0
    self.x = self.y = 0.0
    self.w, self.h = DUMMY_W, 0.0


def layout(g: Graph) -> Graph:
  """Set ``x, y, w, h`` (top-left corner, size) of every node, the bend points of long
  edges, and ``w, h`` of every graph."""
  for n in g.nodes:
    if n.kind == "cluster":
      _size_cluster(n)
    else:
      n.w = max(len(line) for line in n.lines) * CHAR_W + 2 * PAD_X
      n.h = len(n.lines) * LINE_H + 2 * PAD_Y
  _layers(g)
  rows, preds, succs, chains = _split_long_edges(g)
  _order(rows, preds, succs)
  _place(g, rows, preds)
  for e, chain in chains:
    e.via = [(d.x + d.w / 2, d.y, d.y + d.h) for d in chain]
  return g


def _size_cluster(n) -> None:
  titled = len(n.subgraphs) > 1
  x, height = CLUSTER_PAD, 0.0
  for _, sub in n.subgraphs:
    layout(sub)
    sub.ox, sub.oy = x, CLUSTER_HEAD + (SUB_HEAD if titled else 0.0)
    x += sub.w + CLUSTER_PAD
    height = max(height, sub.h + (SUB_HEAD if titled else 0.0))
  head_w = (len(cluster_title(n)) + 2) * CHAR_W + 2 * PAD_X
  n.w = max(x, head_w)
  n.h = CLUSTER_HEAD + height + CLUSTER_PAD


def _layers(g: Graph) -> None:
  """Rows by longest path; outputs share the last row. Nodes are in topological order
  (a jaxpr's equations are), so one pass does it."""
  by_id = {n.id: n for n in g.nodes}
  preds = {n.id: [] for n in g.nodes}
  for e in g.edges:
    preds[e.dst].append(by_id[e.src])
  last = 0
  for n in g.nodes:
    if n.kind != "output":
      n.layer = 1 + max((p.layer for p in preds[n.id]), default=-1)
      last = max(last, n.layer)
  for n in g.nodes:
    if n.kind == "output":
      n.layer = last + 1


def _split_long_edges(g: Graph):
  """Rows (with placeholders), and predecessor/successor lists over the split edges."""
  by_id = {n.id: n for n in g.nodes}
  rows = [[] for _ in range(max((n.layer for n in g.nodes), default=0) + 1)]
  for n in g.nodes:
    rows[n.layer].append(n)
  preds = {n.id: [] for n in g.nodes}
  succs = {n.id: [] for n in g.nodes}
  budget = _DUMMIES_PER_NODE * len(g.nodes)
  chains = []
  for e in sorted(g.edges, key=lambda e: by_id[e.dst].layer - by_id[e.src].layer):
    src, dst = by_id[e.src], by_id[e.dst]
    span = dst.layer - src.layer
    chain = []
    if 1 < span <= budget + 1:
      budget -= span - 1
      for layer in range(src.layer + 1, dst.layer):
        d = _Dummy(f"{e.src}>{e.dst}@{layer}", layer)
        preds[d.id], succs[d.id] = [], []
        rows[layer].append(d)
        chain.append(d)
      chains.append((e, chain))
    path = [src, *chain, dst]
    for a, b in zip(path, path[1:]):
      preds[b.id].append(a)
      succs[a.id].append(b)
  return [r for r in rows if r], preds, succs, chains


def _order(rows, preds, succs) -> None:
  """Barycentric ordering: alternately sort each row by the mean position of its
  neighbours in the row above, then below."""
  for row in rows:
    for i, n in enumerate(row):
      n.order = i
  for sweep in range(_SWEEPS):
    down = sweep % 2 == 0
    nbrs = preds if down else succs
    for row in (rows[1:] if down else rows[-2::-1]):
      def key(n):
        ps = nbrs[n.id]
        return (sum(p.order for p in ps) / len(ps), n.order) if ps else (n.order, n.order)
      row.sort(key=key)
      for i, n in enumerate(row):
        n.order = i


def _place(g: Graph, rows, preds) -> None:
  """Rows top to bottom; in a row, each box as near the centre of its feeders as the boxes
  to its left allow."""
  y = MARGIN
  for row in rows:
    height = max(n.h for n in row if n.kind != "dummy") if any(
        n.kind != "dummy" for n in row) else 0.0
    left = MARGIN
    for n in row:
      ps = preds[n.id]
      want = (sum(p.x + p.w / 2 for p in ps) / len(ps) - n.w / 2) if ps else left
      n.x = max(want, left)
      n.y = y
      if n.kind == "dummy":
        n.h = height
      left = n.x + n.w + GAP_X
    y += height + GAP_Y
  everything = [n for row in rows for n in row]
  shift = MARGIN - min(n.x for n in everything) if everything else 0.0
  for n in everything:
    n.x += shift
  g.w = max((n.x + n.w for n in everything), default=0.0) + MARGIN
  g.h = y - GAP_Y + MARGIN
