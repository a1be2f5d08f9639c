"""hlox.viz: jaxprs as graphs. Golden SVG structure (nodes, edges, labels, clusters) on small
functions, per-primitive cost rules against closed forms and against XLA's cost_analysis,
the notebook displays, save(), and a 2,000-equation smoke test."""
from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.interpreters import cost
from hlox.interpreters.cost import nested_jaxprs

X = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
W = np.ones((4, 5), np.float32)


def count(svg, cls):
  return len(re.findall(rf'<g class="{cls}[ "]', svg))


def kinds(svg):
  return re.findall(r'<g class="node[^"]*" data-kind="(\w+)"', svg)


def parse(svg):
  return ET.fromstring(svg)   # well-formed XML, or this raises


def prims(jaxpr):
  """Primitive names of every equation, nested jaxprs included, in graph order."""
  out = []
  for e in jaxpr.eqns:
    out.append(e.primitive.name)
    for _, j in nested_jaxprs(e.params):
      out.extend(prims(j))
  return out


def mlp(x, w):
  return jnp.tanh(x @ w)


def test_small_function_golden_structure():
  g = hlox.viz.graph(mlp)(X, W)
  svg = g.to_svg()
  parse(svg)
  # 2 inputs, dot_general, tanh, 1 output; x->dot, w->dot, dot->tanh, tanh->out.
  assert kinds(svg) == ["input", "input", "eqn", "eqn", "output"]
  assert count(svg, "edge") == 4 and count(svg, "cluster") == 0
  assert "dot_general" in svg and "tanh" in svg
  labels = re.findall(r'<g class="edge">.*?<text[^>]*>([^<]*)</text>', svg)
  assert sorted(labels) == ["f32[3,4]", "f32[3,5]", "f32[3,5]", "f32[4,5]"]
  # The key parameter of the dot is on its box; the dearest node is outlined.
  assert "dimension_numbers=(([1], [0]), ([], []))" in svg
  heavy = re.findall(r'<g class="node heavy" data-kind="eqn" id="\w+"><title>([^<]*)', svg)
  assert heavy and "dot_general" in heavy[0]
  assert g.heaviest(1)[0][0] == "dot_general"
  assert len(g.nodes) == 5 and len(g.edges) == 4


def test_layout_rows_follow_dataflow():
  g = hlox.viz.graph(mlp)(X, W)
  by_id = {n.id: n for n in g.nodes}
  for e in g.edges:   # every edge points down, and no two boxes of a row overlap
    assert by_id[e.src].y + by_id[e.src].h < by_id[e.dst].y
  rows = {}
  for n in g.nodes:
    rows.setdefault(n.y, []).append(n)
  for row in rows.values():
    row.sort(key=lambda n: n.x)
    for a, b in zip(row, row[1:]):
      assert a.x + a.w <= b.x


def test_literals_and_shared_operands():
  # x*x reads one variable twice: one edge; the literal 2.0 is no node.
  g = hlox.viz.graph(lambda x: x * x + 2.0)(X)
  svg = g.to_svg()
  assert kinds(svg) == ["input", "eqn", "eqn", "output"]
  assert count(svg, "edge") == 3
  assert "2.0:f32[]" not in re.findall(r'data-kind="\w+"', svg)


def test_cond_is_a_cluster_with_two_branches():
  def f(x):
    return lax.cond(x.sum() > 0, lambda a: a + 1.0, lambda a: jnp.sin(a), x)
  svg = hlox.viz.graph(f)(X).to_svg()
  parse(svg)
  assert count(svg, "cluster") == 1 and count(svg, "subgraph") == 2
  assert re.search(r'<g class="cluster" data-kind="cond"', svg)
  assert "branches[0]" in svg and "branches[1]" in svg
  assert "collapsed" in svg and 'class="cluster-body"' in svg   # the fold toggle
  # Each branch draws its own input, equation and output.
  assert kinds(svg).count("input") == 1 + 2 and kinds(svg).count("output") == 1 + 2


def test_scan_while_jit_custom_clusters():
  @hlox.custom_jvp
  def g(x):
    return jnp.sin(x)
  g.defjvp(lambda p, t: (g(p[0]), jnp.cos(p[0]) * t[0]))

  def f(x):
    y = hlox.jit(lambda a: a * 2.0)(x)
    c, ys = lax.scan(lambda c, a: (c + a, c * a), jnp.zeros(4), y)
    c = lax.while_loop(lambda c: c.sum() < 10.0, lambda c: c + 1.0, c)
    return g(c), ys

  gr = hlox.viz.graph(f)(X)
  svg = gr.to_svg()
  parse(svg)
  clusters = re.findall(r'<g class="cluster" data-kind="(\w+)"', svg)
  assert clusters == ["jit", "scan", "while", "custom_jvp_call"]
  assert "length=3" in svg
  assert count(svg, "subgraph") == 1 + 1 + 2 + 1   # while: cond_jaxpr and body_jaxpr
  # Every equation of the jaxpr, nested ones included, is a box or a cluster.
  cj = hlox.make_jaxpr(f)(X)
  drawn = [n.lines[0] for n in gr.nodes if n.kind in ("eqn", "cluster")]
  assert drawn == prims(cj.jaxpr)


def test_graph_of_transformed_functions_matches_their_jaxprs():
  loss = lambda w, x: jnp.sum(jnp.tanh(x @ w) ** 2)
  for f, args in [(hlox.jit(mlp), (X, W)),
                  (hlox.vmap(mlp, in_axes=(0, None)), (X, W)),
                  (hlox.grad(loss), (W, X)),
                  (hlox.vmap(hlox.grad(loss), in_axes=(None, 0)), (W, X[:, None]))]:
    gr = hlox.viz.graph(f)(*args)
    cj = hlox.make_jaxpr(f)(*args)
    assert [n.lines[0] for n in gr.nodes if n.kind in ("eqn", "cluster")] == prims(cj.jaxpr)
    parse(gr.to_svg())
    # The cost of the graph is the cost of its jaxpr.
    assert gr.total_cost == cost.jaxpr_cost(cj)


def test_static_arguments():
  def f(x, n, *, scale):
    for _ in range(n):
      x = jnp.sin(x) * scale
    return x
  gr = hlox.viz.graph(f, static_argnums=1, static_argnames="scale")(X, 3, scale=2.0)
  assert sum(n.kind == "eqn" for n in gr.nodes) == 6


def test_dot_and_conv_cost_rules_are_analytic():
  a = np.ones((2, 7, 3), np.float32)
  b = np.ones((2, 3, 5), np.float32)
  cj = hlox.make_jaxpr(lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))))(a, b)
  c = cost.eqn_cost(cj.eqns[0])
  assert c.flops == 2 * 2 * 7 * 5 * 3
  assert c.bytes == 4 * (a.size + b.size + 2 * 7 * 5)
  lhs = np.ones((2, 6, 9, 9), np.float32)    # NCHW
  rhs = np.ones((8, 3, 3, 3), np.float32)    # OIHW, two feature groups
  cj = hlox.make_jaxpr(lambda x, k: lax.conv_general_dilated(
      x, k, (1, 1), "VALID", feature_group_count=2))(lhs, rhs)
  (eqn,) = [e for e in cj.eqns if e.primitive.name == "conv_general_dilated"]
  assert cost.eqn_cost(eqn).flops == 2 * (2 * 8 * 7 * 7) * (3 * 3 * 3)


def test_control_flow_costs():
  body = lambda c, a: (c + a, c * a)
  cj = hlox.make_jaxpr(lambda x: lax.scan(body, jnp.zeros(4), x))(X)
  (eqn,) = [e for e in cj.eqns if e.primitive.name == "scan"]
  assert cost.eqn_cost(eqn).flops == 3 * (4 + 4)
  cj = hlox.make_jaxpr(lambda x: lax.cond(True, lambda a: a @ W, lambda a: a @ W + 1.0, x))(X)
  (eqn,) = [e for e in cj.eqns if e.primitive.name == "cond"]
  assert cost.eqn_cost(eqn).flops == 2 * 3 * 5 * 4 + 15   # the dearer branch


def test_register_cost_overrides_the_default():
  from hlox.lax import elementwise
  cj = hlox.make_jaxpr(jnp.sin)(X)
  assert cost.eqn_cost(cj.eqns[0]).flops == 12   # elementwise default
  saved = cost.cost_rules.get(elementwise.sin_p)
  try:
    cost.register_cost(elementwise.sin_p, lambda ins, outs, **_: cost.Cost(100.0, 1.0))
    assert cost.eqn_cost(cj.eqns[0]) == cost.Cost(100.0, 1.0)
  finally:
    if saved is None:
      cost.cost_rules.pop(elementwise.sin_p)
    else:
      cost.cost_rules[elementwise.sin_p] = saved


@pytest.mark.parametrize("case", ["matmul", "conv"])
def test_total_flops_agree_with_xla_cost_analysis(case):
  if case == "matmul":
    x = np.ones((64, 128), np.float32)
    w = np.ones((128, 96), np.float32)
    f = lambda x, w: jnp.sum(jnp.maximum(x @ w, 0.0) @ w.T)
    args = (x, w)
  else:
    x = np.ones((4, 8, 16, 16), np.float32)
    k = np.ones((16, 8, 3, 3), np.float32)
    f = lambda x, k: jnp.tanh(lax.conv_general_dilated(x, k, (1, 1), "SAME"))
    args = (x, k)
  ours = hlox.viz.graph(f)(*args).total_cost.flops
  analysis = hlox.jit(f).lower(*args).compile().cost_analysis()
  analysis = analysis[0] if isinstance(analysis, (list, tuple)) else analysis
  assert 0.5 <= ours / analysis["flops"] <= 2.0, (ours, analysis["flops"])


def test_save_svg_and_html(tmp_path):
  g = hlox.viz.graph(mlp)(X, W)
  p = g.save(tmp_path / "f.svg")
  text = (tmp_path / "f.svg").read_text()
  assert p.endswith("f.svg") and text.startswith("<?xml")
  root = ET.fromstring(text.split("\n", 1)[1])
  assert root.tag.endswith("svg")
  g.save(str(tmp_path / "f.html"))
  html = (tmp_path / "f.html").read_text()
  assert "<svg" in html and "collapse all" in html and "dot_general" in html
  with pytest.raises(ValueError, match=r"JaxprGraph.save.*f\.png"):
    g.save(tmp_path / "f.png")


def test_notebook_reprs():
  g = hlox.viz.graph(mlp)(X, W)
  assert g._repr_svg_() == g.to_svg()
  assert g.to_svg() in g._repr_html_()
  cj = hlox.make_jaxpr(mlp)(X, W)
  html = cj._repr_html_()
  assert '<span class="prim">dot_general</span>' in html
  assert '<span class="prim">tanh</span>' in html
  assert '<span class="type">f32[3,4]</span>' in html
  assert '<span class="kw">lambda</span>' in html
  assert '<span class="var">a</span>' in html
  assert "<details>" in html and "<svg" in html
  # The text is the printed jaxpr, only coloured.
  assert re.sub(r"<[^>]+>", "", html.split("<pre>")[1].split("</pre>")[0]) == \
      str(cj).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def test_bad_input():
  with pytest.raises(TypeError, match="hlox.viz.graph: expected a callable, got int"):
    hlox.viz.graph(3)
  with pytest.raises(TypeError, match="JaxprGraph: expected a ClosedJaxpr or Jaxpr"):
    hlox.viz.JaxprGraph("not a jaxpr")


def test_large_jaxpr_renders_quickly():
  def big(x):
    for _ in range(1000):
      x = jnp.sin(x) * x
    return x
  cj = hlox.make_jaxpr(big)(X)
  assert len(cj.eqns) == 2000
  t0 = time.perf_counter()
  g = hlox.viz.JaxprGraph(cj)
  svg = g.to_svg()
  elapsed = time.perf_counter() - t0
  assert count(svg, "node") == 2002 and count(svg, "edge") == 3001
  parse(svg)
  assert elapsed < 10.0, elapsed   # the target is 2 s; generous for a loaded machine


def test_value_read_along_a_long_chain_is_one_trunk():
  # x feeds all 500 multiplies: its edges share one line of bend points, so the picture
  # stays narrow and each edge's path short (no quadratic blow-up).
  def chain(x):
    y = x
    for _ in range(500):
      y = y * x
    return y
  g = hlox.viz.graph(chain)(X)
  assert len(g.edges) == 1000   # x * x first: one edge
  assert g._graph.w < 400
  assert max(len(e.via) for e in g.edges) <= 2
  assert len(g.to_svg()) < 500_000


def test_pmap_body_is_a_cluster():
  f = hlox.pmap(lambda x: jnp.sin(x) * 2.0)
  svg = hlox.viz.graph(f)(X[:1]).to_svg()
  assert re.findall(r'<g class="cluster" data-kind="(\w+)"', svg) == ["xla_pmap"]
  assert "sin" in svg and "f32[1,4]" in svg and "f32[4]" in svg
