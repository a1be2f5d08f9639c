"""A layered layout in pure Python: nodes in rows by longest path from the inputs, rows
ordered by barycentres of their neighbours, boxes pulled towards the nodes that feed them.

An edge spanning several rows gets a thin placeholder in each row it crosses, so ordering
routes it around the boxes there (Sugiyama's dummy nodes); edges from one source share
them. Placeholders are handed out to the shortest long edges first, up to a budget linear
in the graph; the rest are drawn straight. Clusters are
laid out inside out: each nested graph first, then the cluster is one big box of the outer
graph. Everything is linear in nodes plus edges, so thousands of equations lay out in well
under a second.
"""
from __future__ import annotations

import bisect

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
  _set_bends(chains)
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
  """Rows by longest path from the inputs; then each equation moves down to just above its
  first consumer (so a value made early but used late is drawn where it is used, not in a
  crowded top row). Inputs stay in the first row, outputs share the last. Nodes are in
  topological order (a jaxpr's equations are), so one pass each way does it."""
  by_id = {n.id: n for n in g.nodes}
  preds = {n.id: [] for n in g.nodes}
  succs = {n.id: [] for n in g.nodes}
  for e in g.edges:
    preds[e.dst].append(by_id[e.src])
    succs[e.src].append(by_id[e.dst])
  last = 0
  for n in g.nodes:
    if n.kind != "output":
      n.layer = 1 + max((p.layer for p in preds[n.id]), default=-1)
      last = max(last, n.layer)
  for n in g.nodes:
    if n.kind == "output":
      n.layer = last + 1
  for n in reversed(g.nodes):
    if n.kind in ("eqn", "cluster") and succs[n.id]:
      n.layer = min(s.layer for s in succs[n.id]) - 1


def _split_long_edges(g: Graph):
  """Rows (with placeholders), predecessor/successor lists over the split edges, and for
  each long edge its trunk and how far down it follows it.

  Edges from one source share one trunk of placeholders (a value read all along a long chain
  is one line with branches, not a fan of parallel lines). Short trunks are laid first, up
  to the budget; edges beyond their source's trunk are drawn straight."""
  by_id = {n.id: n for n in g.nodes}
  rows = [[] for _ in range(max((n.layer for n in g.nodes), default=0) + 1)]
  for n in g.nodes:
    rows[n.layer].append(n)
  preds = {n.id: [] for n in g.nodes}
  succs = {n.id: [] for n in g.nodes}
  segments = set()

  def link(a, b):
    if (a.id, b.id) not in segments:
      segments.add((a.id, b.id))
      preds[b.id].append(a)
      succs[a.id].append(b)

  def span(e):
    return by_id[e.dst].layer - by_id[e.src].layer

  long_by_src = {}
  for e in g.edges:
    if span(e) > 1:
      long_by_src.setdefault(e.src, []).append(e)
    else:
      link(by_id[e.src], by_id[e.dst])
  budget = _DUMMIES_PER_NODE * len(g.nodes)
  chains = []
  for src_id, edges in sorted(long_by_src.items(), key=lambda kv: max(map(span, kv[1]))):
    src = by_id[src_id]
    length = min(max(map(span, edges)) - 1, budget)
    budget -= length
    trunk, prev = [], src
    for layer in range(src.layer + 1, src.layer + 1 + length):
      d = _Dummy(f"{src_id}@{layer}", layer)
      preds[d.id], succs[d.id] = [], []
      rows[layer].append(d)
      link(prev, d)
      trunk.append(d)
      prev = d
    for e in edges:
      k = span(e) - 1
      if k <= length:
        link(trunk[k - 1], by_id[e.dst])
        chains.append((e, trunk, k))
      else:
        link(src, by_id[e.dst])
  return [r for r in rows if r], preds, succs, chains


def _set_bends(chains) -> None:
  """Each long edge's bend points: its trunk's straight runs, cut where the edge leaves."""
  runs_of = {}
  for e, trunk, k in chains:
    runs = runs_of.get(id(trunk))
    if runs is None:   # (first placeholder index, x, top) of each vertical run
      runs = runs_of[id(trunk)] = []
      for i, d in enumerate(trunk):
        x = d.x + d.w / 2
        if not runs or abs(runs[-1][1] - x) >= 0.5:
          runs.append((i, x, d.y))
    n = bisect.bisect_left(runs, k, key=lambda r: r[0])
    via = []
    for j in range(n):
      end = min(runs[j + 1][0] if j + 1 < len(runs) else k, k) - 1
      via.append((runs[j][1], runs[j][2], trunk[end].y + trunk[end].h))
    e.via = via


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


_DUMMY_WEIGHT = 1e6        # passing edges hold their line; boxes make way for them


def _place(g: Graph, rows, preds) -> None:
  """Rows top to bottom; in a row, each box as near the centre of its feeders as the row
  allows, overlaps settled by least squares (passing edges weigh most, so they run straight
  and boxes do not drift sideways row after row)."""
  y = MARGIN
  for row in rows:
    real = [n.h for n in row if n.kind != "dummy"]
    height = max(real) if real else 0.0
    wants = []
    for n in row:
      ps = preds[n.id]
      wants.append(sum(p.x + p.w / 2 for p in ps) / len(ps) - n.w / 2 if ps else None)
    _settle(row, wants)
    for n in row:
      n.y = y
      if n.kind == "dummy":
        n.h = height
    y += height + GAP_Y
  everything = [n for row in rows for n in row]
  shift = MARGIN - min(n.x for n in everything) if everything else 0.0
  for n in everything:
    n.x += shift
  g.w = max((n.x + n.w for n in everything), default=0.0) + MARGIN
  g.h = y - GAP_Y + MARGIN


def _settle(row, wants) -> None:
  """Set ``x`` of the boxes of ``row``, in order and ``GAP_X`` apart, closest (weighted
  least squares) to ``wants`` (None: no preference). With ``o`` the packed offsets, ``x - o``
  must not decrease: an isotonic regression, solved by pooling adjacent violators."""
  offsets, o = [], 0.0
  for n in row:
    offsets.append(o)
    o += n.w + GAP_X
  known = [w for w in wants if w is not None]
  base = (sum(known) / len(known) - offsets[len(offsets) // 2]) if known else MARGIN
  blocks = []   # [weighted sum, weight, count]
  for n, want, off in zip(row, wants, offsets):
    weight = 1e-3 if want is None else (_DUMMY_WEIGHT if n.kind == "dummy" else 1.0)
    q = (base if want is None else want - off)
    blocks.append([q * weight, weight, 1])
    while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
      s, w, c = blocks.pop()
      blocks[-1][0] += s
      blocks[-1][1] += w
      blocks[-1][2] += c
  i = 0
  for s, w, c in blocks:
    for _ in range(c):
      row[i].x = s / w + offsets[i]
      i += 1
