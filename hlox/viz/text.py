"""A printed jaxpr as syntax-coloured HTML (spans for keywords, primitives, parameter names,
variables, types and literals), with a fold-out graph: what a ``make_jaxpr`` result shows in
a notebook.
"""
from __future__ import annotations

import re
from html import escape

from hlox.interpreters.cost import nested_jaxprs

_TOKEN = re.compile(r"""
    (?P<type>\b(?:bool|bf16|f8\w*|[fiuc]\d+|float0|key<\w+>)\[[\d,]*\])
  | (?P<kw>(?<=\{\ )lambda\b|\b(?:let|in)\b)
  | (?P<prim>(?<==\ )[A-Za-z_][\w-]*)
  | (?P<param>\b\w+(?==))
  | (?P<num>-?\b\d+(?:\.\d*)?(?:e[-+]?\d+)?(?=:))
  | (?P<var>\b[a-z]+\b|\b_\b)
""", re.VERBOSE)

_STYLE = """
.hlox-jaxpr pre { font: 12px ui-monospace, Menlo, Consolas, monospace; line-height: 1.35;
                  background: #fbfbfb; padding: 6px; margin: 0; }
.hlox-jaxpr .kw { color: #7b1fa2; font-weight: bold; }
.hlox-jaxpr .prim { color: #c62828; font-weight: bold; }
.hlox-jaxpr .param { color: #6d4c41; }
.hlox-jaxpr .var { color: #1565c0; }
.hlox-jaxpr .type { color: #2e7d32; }
.hlox-jaxpr .num { color: #ef6c00; }
.hlox-jaxpr summary { cursor: pointer; font: 12px monospace; color: #4527a0; }
"""

_GRAPH_LIMIT = 5000   # equations: bigger jaxprs show only their text inline


def highlight(text: str) -> str:
  """``text`` (a printed jaxpr) with its tokens wrapped in classed ``<span>``s."""
  out, pos = [], 0
  for m in _TOKEN.finditer(text):
    out.append(escape(text[pos:m.start()]))
    out.append(f'<span class="{m.lastgroup}">{escape(m.group())}</span>')
    pos = m.end()
  out.append(escape(text[pos:]))
  return "".join(out)


def count_eqns(jaxpr) -> int:
  return sum(1 + sum(count_eqns(j) for _, j in nested_jaxprs(e.params)) for e in jaxpr.eqns)


def jaxpr_html(closed, graph_html=None) -> str:
  """The HTML of a printed jaxpr; ``graph_html()`` (called only for jaxprs of at most
  ``_GRAPH_LIMIT`` equations) gives the graph shown when the toggle is opened."""
  jaxpr = getattr(closed, "jaxpr", closed)
  parts = [f'<div class="hlox-jaxpr"><style>{_STYLE}</style>',
           f"<pre>{highlight(str(closed))}</pre>"]
  n = count_eqns(jaxpr)
  if graph_html is not None:
    if n <= _GRAPH_LIMIT:
      parts.append(f"<details><summary>graph ({n} equations)</summary>{graph_html()}</details>")
    else:
      parts.append(f"<details><summary>graph: {n} equations, too many to draw inline; use "
                   f"hlox.viz.graph(f)(*args).save('f.svg')</summary></details>")
  parts.append("</div>")
  return "".join(parts)
