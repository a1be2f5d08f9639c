"""``hlox.viz``: jaxprs as pictures. ``graph(f)(*args)`` is a ``JaxprGraph``, the dataflow graph
of ``make_jaxpr(f)(*args)`` with nested jaxprs as collapsible clusters and per-equation FLOP
and byte estimates, shown in notebooks and saved as SVG or HTML.

Belongs here: building the graph from a jaxpr (``model``), a pure-Python layered layout
(``layout``), SVG/HTML drawing (``svg``), syntax-coloured jaxpr text (``text``). Costs come
from the per-primitive rules in ``hlox.interpreters.cost``. May import the transformations
(``hlox.api``), ``hlox.core`` and ``hlox.interpreters``; never jaxlib nor the runtime.
Importing it installs the notebook display of ``make_jaxpr`` results.
"""
from hlox.core.jaxpr import set_html_renderer as _set_html_renderer
from hlox.interpreters.cost import Cost, jaxpr_cost, register_cost
from hlox.viz.jaxpr_graph import JaxprGraph, closed_jaxpr_html, graph
from hlox.viz.text import highlight, jaxpr_html

_set_html_renderer(closed_jaxpr_html)

__all__ = ["Cost", "JaxprGraph", "graph", "highlight", "jaxpr_cost", "jaxpr_html",
           "register_cost"]
