"""Drawing a laid-out graph as SVG text (and an HTML page around it).

Structure, which tests and stylesheets rely on: every box is ``<g class="node" data-kind=..>``
(``heavy`` added for the dearest equations), every edge ``<g class="edge">`` with a path and
a type label, every equation holding nested jaxprs ``<g class="cluster">`` whose title
toggles its ``cluster-body`` (the nested graphs, each a ``<g class="subgraph">``).
"""
from __future__ import annotations

from html import escape

from hlox.viz import layout as lay
from hlox.viz.model import Graph, cluster_title

_STYLE = """
.hlox-graph text { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
.hlox-graph .node rect { stroke: #555; stroke-width: 1; }
.hlox-graph .node[data-kind=input] rect { fill: #dcebfa; }
.hlox-graph .node[data-kind=const] rect { fill: #eeeeee; }
.hlox-graph .node[data-kind=output] rect { fill: #dff2df; }
.hlox-graph .node.heavy rect { stroke: #b71c1c; stroke-width: 2.5; }
.hlox-graph .node .cost { fill: #666; font-size: 10px; }
.hlox-graph .edge path { fill: none; stroke: #888; stroke-width: 1; }
.hlox-graph .edge text { fill: #1565c0; font-size: 9px; }
.hlox-graph .cluster > rect { fill: #fafafa; stroke: #7e57c2; stroke-dasharray: 4 2; }
.hlox-graph .cluster-title { fill: #4527a0; cursor: pointer; font-weight: bold; }
.hlox-graph .subgraph > rect { fill: none; stroke: #b39ddb; stroke-dasharray: 2 2; }
.hlox-graph .subgraph-title { fill: #5e35b1; font-size: 10px; }
.hlox-graph .collapsed > .cluster-body { display: none; }
"""

_TOGGLE = "this.parentNode.classList.toggle('collapsed')"


def _fill(heat: float) -> str:
  # White to a warm red; square root so that mid-weight nodes are still visibly tinted.
  t = heat ** 0.5
  r, g, b = 255, int(255 - t * (255 - 112)), int(255 - t * (255 - 67))
  return f"#{r:02x}{g:02x}{b:02x}"


def _curve(x1, y1, x2, y2) -> str:
  ym = (y1 + y2) / 2
  return f" C{x1:.1f},{ym:.1f} {x2:.1f},{ym:.1f} {x2:.1f},{y2:.1f}"


def _path(x1, y1, via, x2, y2) -> str:
  """S-curves between rows, straight down through the rows a long edge crosses."""
  d = [f"M{x1:.1f},{y1:.1f}"]
  for x, top, bottom in via:
    d.append(_curve(x1, y1, x, top))
    d.append(f" L{x:.1f},{bottom:.1f}")
    x1, y1 = x, bottom
  d.append(_curve(x1, y1, x2, y2))
  return "".join(d)


def _draw_edges(g: Graph, out: list) -> None:
  by_id = {n.id: n for n in g.nodes}
  incoming = {}
  for e in g.edges:
    incoming.setdefault(e.dst, []).append(e)
  for dst_id, edges in incoming.items():
    dst = by_id[dst_id]
    edges.sort(key=lambda e: by_id[e.src].x + by_id[e.src].w / 2)
    k = len(edges)
    for i, e in enumerate(edges):
      src = by_id[e.src]
      x1, y1 = src.x + src.w / 2, src.y + src.h
      x2, y2 = dst.x + dst.w * (i + 1) / (k + 1), dst.y
      if k == 1 and dst.layer - src.layer <= 1:   # halfway down a lone short edge
        lx, ly = (x1 + x2) / 2 + 3, (y1 + y2) / 2 + 3
      else:   # just above the port it enters, every other one raised a line
        lx, ly = x2 + 3, y2 - 5 - 10 * (i % 2)
      out.append(f'<g class="edge"><title>{escape(e.tooltip)}</title>'
                 f'<path d="{_path(x1, y1, e.via, x2, y2)}"/>'
                 f'<text x="{lx:.1f}" y="{ly:.1f}">{escape(e.label)}</text></g>')


def _draw_node(n, out: list) -> None:
  if n.kind == "cluster":
    _draw_cluster(n, out)
    return
  cls = "node heavy" if n.heavy else "node"
  fill = f' style="fill:{_fill(n.heat)}"' if n.kind == "eqn" else ""
  out.append(f'<g class="{cls}" data-kind="{n.kind}" id="{n.id}">'
             f'<title>{escape(n.tooltip)}</title>'
             f'<rect x="{n.x:.1f}" y="{n.y:.1f}" width="{n.w:.1f}" height="{n.h:.1f}" '
             f'rx="4"{fill}/>')
  for i, line in enumerate(n.lines):
    y = n.y + lay.PAD_Y + (i + 1) * lay.LINE_H - 3
    extra = ' class="cost"' if n.kind == "eqn" and i == len(n.lines) - 1 else ""
    out.append(f'<text x="{n.x + lay.PAD_X:.1f}" y="{y:.1f}"{extra}>{escape(line)}</text>')
  out.append("</g>")


def _draw_cluster(n, out: list) -> None:
  out.append(f'<g class="cluster" data-kind="{escape(n.lines[0])}" id="{n.id}">'
             f'<title>{escape(n.tooltip)}</title>'
             f'<rect x="{n.x:.1f}" y="{n.y:.1f}" width="{n.w:.1f}" height="{n.h:.1f}" rx="6"/>'
             f'<text class="cluster-title" x="{n.x + lay.PAD_X:.1f}" y="{n.y + 15:.1f}" '
             f'onclick="{_TOGGLE}">▾ {escape(cluster_title(n))}</text>'
             f'<g class="cluster-body">')
  titled = len(n.subgraphs) > 1
  for label, sub in n.subgraphs:
    x, y = n.x + sub.ox, n.y + sub.oy
    out.append(f'<g class="subgraph" transform="translate({x:.1f},{y:.1f})">'
               f'<title>{escape(label)}</title>')
    if titled:
      out.append(f'<rect x="0" y="{-lay.SUB_HEAD:.1f}" width="{sub.w:.1f}" '
                 f'height="{sub.h + lay.SUB_HEAD:.1f}" rx="4"/>'
                 f'<text class="subgraph-title" x="{lay.PAD_X:.1f}" y="-5">'
                 f'{escape(label)}</text>')
    _draw_graph(sub, out)
    out.append("</g>")
  out.append("</g></g>")


def _draw_graph(g: Graph, out: list) -> None:
  _draw_edges(g, out)
  for n in g.nodes:
    _draw_node(n, out)


def to_svg(g: Graph, title: str = "") -> str:
  """The SVG document of a laid-out graph."""
  out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="hlox-graph" '
         f'width="{g.w:.0f}" height="{g.h:.0f}" viewBox="0 0 {g.w:.1f} {g.h:.1f}">',
         f"<style>{_STYLE}</style>"]
  if title:
    out.append(f"<title>{escape(title)}</title>")
  _draw_graph(g, out)
  out.append("</svg>")
  return "".join(out)


def to_html(svg: str, heading: str = "") -> str:
  """An HTML fragment: buttons that fold and unfold every cluster, then the SVG."""
  fold = ("var s=this.parentNode.parentNode.querySelectorAll('.cluster');"
          "for(var i=0;i<s.length;i++)s[i].classList.{}('collapsed');")
  return (f'<div class="hlox-graph-view"><div style="font:12px monospace">'
          f'{escape(heading)} '
          f'<button onclick="{fold.format("add")}">collapse all</button> '
          f'<button onclick="{fold.format("remove")}">expand all</button></div>'
          f'<div style="overflow:auto;max-height:800px">{svg}</div></div>')
