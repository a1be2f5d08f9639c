"""``graph(f)(*args)``: trace ``f`` with ``make_jaxpr`` and return a ``JaxprGraph``, the picture
of its jaxpr that notebooks display and ``save`` writes as SVG or HTML.
"""
from __future__ import annotations

import functools
import os
from typing import Callable

from hlox import api
from hlox.core.jaxpr import ClosedJaxpr, Jaxpr
from hlox.interpreters import cost as cost_lib
from hlox.viz import layout, model, svg, text


class JaxprGraph:
  """A jaxpr drawn as a dataflow graph, with per-equation cost estimates.

  ``nodes``/``edges`` list every node and edge (nested ones included); ``total_cost`` is the
  estimate for the whole jaxpr (``flops``, ``bytes``); ``heaviest(k)`` the dearest equations.
  """

  def __init__(self, jaxpr, title: str = "", heaviest: int = 3):
    if not isinstance(jaxpr, (ClosedJaxpr, Jaxpr)):
      raise TypeError(f"JaxprGraph: expected a ClosedJaxpr or Jaxpr, got "
                      f"{type(jaxpr).__name__}")
    self.jaxpr = jaxpr
    self.title = title
    self._graph = model.build_graph(jaxpr)
    model.mark_heat(self._graph, heaviest)
    layout.layout(self._graph)
    self._svg = None

  @property
  def nodes(self) -> list:
    return list(self._graph.walk())

  @property
  def edges(self) -> list:
    return list(self._graph.walk_edges())

  @property
  def total_cost(self) -> cost_lib.Cost:
    return cost_lib.jaxpr_cost(self.jaxpr)

  def heaviest(self, k: int = 3) -> list[tuple[str, cost_lib.Cost]]:
    """The ``k`` equations (nested ones included) with the most estimated flops."""
    eqns = [n for n in self._graph.walk() if n.kind == "eqn"]
    eqns.sort(key=lambda n: -n.cost.flops)
    return [(n.lines[0], n.cost) for n in eqns[:k]]

  def to_svg(self) -> str:
    if self._svg is None:
      self._svg = svg.to_svg(self._graph, self.title)
    return self._svg

  def to_html(self) -> str:
    c = self.total_cost
    heading = f"{self.title + ': ' if self.title else ''}{model.format_cost(c)} in total"
    return svg.to_html(self.to_svg(), heading)

  def _repr_svg_(self):
    return self.to_svg()

  def _repr_html_(self):
    return self.to_html()

  def save(self, path) -> str:
    """Write the picture to ``path``: SVG for ``.svg``, an HTML page for ``.html``/``.htm``."""
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if ext == ".svg":
      body = '<?xml version="1.0" encoding="UTF-8"?>\n' + self.to_svg()
    elif ext in (".html", ".htm"):
      body = (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>'
              f'{self.title or "jaxpr"}</title></head><body>{self.to_html()}</body></html>')
    else:
      raise ValueError(f"JaxprGraph.save: cannot tell the format of {path!r}; use a name "
                       f"ending in .svg or .html")
    with open(path, "w", encoding="utf-8") as f:
      f.write(body)
    return path

  def __repr__(self):
    return (f"JaxprGraph({self.title or 'jaxpr'}: {len(self.nodes)} nodes, "
            f"{len(self.edges)} edges, {model.format_cost(self.total_cost)})")


def graph(fun: Callable, *, static_argnums=(), static_argnames=(), axis_env=None,
          heaviest: int = 3) -> Callable:
  """``graph(f)(*args)`` is the ``JaxprGraph`` of ``make_jaxpr(f)(*args)``.

  ``static_argnums``/``static_argnames`` are as for ``jit`` (those arguments are Python
  values, not traced); ``axis_env`` as for ``make_jaxpr``; ``heaviest``: how many of the
  dearest equations get a highlighted outline.
  """
  if not callable(fun):
    raise TypeError(f"hlox.viz.graph: expected a callable, got {type(fun).__name__}")
  names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
  title = getattr(fun, "__name__", type(fun).__name__)

  @functools.wraps(fun)
  def make(*args, **kwargs):
    static_kw = {k: kwargs.pop(k) for k in names if k in kwargs}
    target = functools.partial(fun, **static_kw) if static_kw else fun
    closed = api.make_jaxpr(target, static_argnums=static_argnums, axis_env=axis_env)(
        *args, **kwargs)
    return JaxprGraph(closed, title, heaviest)

  return make


def closed_jaxpr_html(closed) -> str:
  """What a ``ClosedJaxpr`` shows in a notebook: coloured text, a toggle to its graph."""
  return text.jaxpr_html(closed, lambda: JaxprGraph(closed).to_html())
