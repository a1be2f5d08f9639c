"""``hlox.experimental.xla_metadata``: metadata from blocks, decorators and tagged values
reaches the lowered ops as ``mhlo.frontend_attributes``; ``xla_metadata_call`` tags one call
op and its derived calls; the HLO matches JAX's op for op (JAX oracle)."""
import re

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.experimental.xla_metadata import (fuse_limit, must_fuse_call, set_xla_metadata,
                                            xla_metadata_call, xla_metadata_call2)
from tests.util import printed_here, printed_in_jax


def _lines_with(text, op):
  return [line for line in text.splitlines() if op in line]


def test_block_tags_every_op_and_records_on_equations():
  @hlox.jit
  def f(a, b):
    with set_xla_metadata(a="b", flag=True, n=10):
      return a * b + 1.0

  for eqn in f.trace(1.0, 2.0).jaxpr.eqns:
    assert eqn.ctx.xla_metadata == {"a": "b", "flag": True, "n": 10}
  text = f.lower(1.0, 2.0).as_text()
  attrs = 'mhlo.frontend_attributes = {a = "b", flag = "true", n = "10"}'
  for op in ("stablehlo.multiply", "stablehlo.add"):
    assert all(attrs in line for line in _lines_with(text, op)), text
  np.testing.assert_allclose(f(2.0, 3.0), 7.0)


def test_decorator_wraps_lower_and_nests_with_blocks():
  @set_xla_metadata(a="b")
  @hlox.jit
  def f(x, y):
    with set_xla_metadata(c="d"):
      return x + y

  assert 'mhlo.frontend_attributes = {a = "b", c = "d"}' in f.lower(1.0, 2.0).as_text()
  assert f.trace(1.0, 2.0).jaxpr.eqns[0].ctx.xla_metadata == {"a": "b", "c": "d"}
  assert float(f(1.0, 2.0)) == 3.0


def test_traces_are_cached_per_metadata():
  @hlox.jit
  def g(a, b):
    return a * b

  with set_xla_metadata(k="v"):
    tagged = g.lower(1.0, 2.0).as_text()
  plain = g.lower(1.0, 2.0).as_text()
  assert 'mhlo.frontend_attributes = {k = "v"}' in tagged
  assert "frontend_attributes" not in plain
  with set_xla_metadata(k="w"):
    assert 'mhlo.frontend_attributes = {k = "w"}' in g.lower(1.0, 2.0).as_text()


def test_none_unsets_and_inner_wins():
  @hlox.jit
  def f(x):
    with set_xla_metadata(a="b"):
      y = jnp.sin(x)
      with set_xla_metadata(a=None):
        z = jnp.cos(y)
      with set_xla_metadata(a="c"):
        return z * 2.0

  text = f.lower(1.0).as_text()
  assert 'frontend_attributes = {a = "b"}' in _lines_with(text, "stablehlo.sine")[0]
  assert "frontend_attributes" not in _lines_with(text, "stablehlo.cosine")[0]
  assert 'frontend_attributes = {a = "c"}' in _lines_with(text, "stablehlo.multiply")[0]


def test_metadata_survives_grad_outside_the_block():
  @hlox.jit
  def f(x):
    with set_xla_metadata(a="b"):
      return jnp.sin(x) * x

  text = hlox.jit(hlox.grad(f)).lower(1.0).as_text()
  # The derivative's cosine comes from re-emitting ``sin``'s equation: it keeps the tag.
  assert all('{a = "b"}' in line for line in _lines_with(text, "stablehlo.cosine")), text
  np.testing.assert_allclose(hlox.grad(f)(0.5), np.cos(0.5) * 0.5 + np.sin(0.5), rtol=1e-6)


def test_vmap_keeps_the_inner_metadata():
  @hlox.jit
  def f(x, y):
    with set_xla_metadata(a="b"):
      return x + y

  with set_xla_metadata(a="d"):
    jaxpr = hlox.make_jaxpr(hlox.vmap(f, in_axes=(0, None)))(jnp.arange(3.0), 1.0)
  assert [e.ctx.xla_metadata for e in jaxpr.eqns] == [{"a": "d"}]
  text = hlox.jit(hlox.vmap(f, in_axes=(0, None))).lower(jnp.arange(3.0), 1.0).as_text()
  assert all('{a = "b"}' in line for line in _lines_with(text, "stablehlo.add")), text


def test_value_tagging_tags_the_producer_only():
  def f(x, y):
    return set_xla_metadata({"s": x @ y, "d": x - y}, t="v")

  x = np.ones((2, 2), np.float32)
  text = hlox.jit(f).lower(x, x).as_text()
  assert 'frontend_attributes = {t = "v"}' in _lines_with(text, "stablehlo.dot_general")[0]
  assert 'frontend_attributes = {t = "v"}' in _lines_with(text, "stablehlo.subtract")[0]
  # Tagging a function's argument tags nothing; the value is unchanged.
  assert "frontend_attributes" not in hlox.jit(lambda a: set_xla_metadata(a, t="v")).lower(
      x).as_text()
  out = hlox.jit(f)(x, 2 * x)
  np.testing.assert_allclose(out["s"], 4 * np.ones((2, 2)))
  # Linear: its transpose passes the cotangent through.
  np.testing.assert_allclose(hlox.grad(lambda a: set_xla_metadata(a * a, t="v"))(3.0), 6.0)
  np.testing.assert_allclose(
      hlox.vmap(lambda a: set_xla_metadata(a + 1, t="v"))(jnp.arange(3.0)), [1, 2, 3])


def test_fuse_limit_and_while_bodies():
  @hlox.jit
  def f(x):
    with fuse_limit():
      return lax.while_loop(lambda v: v < 10.0, lambda v: v + 1.0, x)

  text = f.lower(1.0).as_text()
  for op in ("stablehlo.while", "stablehlo.compare", "stablehlo.add"):
    assert all('FUSE_LIMIT = "true"' in line for line in _lines_with(text, op)), (op, text)
  assert float(f(1.0)) == 10.0


def test_xla_metadata_call_tags_the_call_op():
  f = xla_metadata_call(lambda x: x + 1, flag=True, level=3, ratio=0.5, jaxpr="v")
  text = hlox.jit(f).lower(1.0).as_text()
  call, = _lines_with(text, "call @xla_metadata_call")
  assert 'flag = "true"' in call and 'level = "3"' in call and 'ratio = "0.5"' in call
  assert 'jaxpr = "v"' in call
  assert float(f(1.0)) == 2.0
  g = must_fuse_call("7")(lambda x: jnp.square(x).sum())
  assert 'MUST_FUSE = "7"' in _lines_with(hlox.jit(g).lower(jnp.ones(4)).as_text(),
                                         "call @xla_metadata_call")[0]


def test_xla_metadata_call_under_autodiff():
  @xla_metadata_call(a="b")
  def f(x):
    return jnp.sin(x)

  # The forward call and the transposed (backward) call.
  assert hlox.jit(hlox.grad(f)).lower(1.0).as_text().count('{a = "b"}') == 2
  np.testing.assert_allclose(hlox.grad(f)(0.3), np.cos(0.3), rtol=1e-6)

  drop = xla_metadata_call2(jnp.sin, {"tag": "x"}, ad_metadata="drop")
  assert hlox.jit(hlox.value_and_grad(drop)).lower(1.0).as_text().count('tag = "x"') == 1
  retag = xla_metadata_call2(jnp.sin, {"tag": "x"}, ad_metadata={"tag": "x_bwd"})
  text = hlox.jit(hlox.value_and_grad(retag)).lower(1.0).as_text()
  assert text.count('tag = "x"') == 1 and text.count('tag = "x_bwd"') == 1
  jvp_text = hlox.jit(lambda x, t: hlox.jvp(drop, (x,), (t,))).lower(1.0, 1.0).as_text()
  assert jvp_text.count('tag = "x"') == 1
  out, tangent = hlox.jvp(drop, (0.3,), (2.0,))
  np.testing.assert_allclose(tangent, 2 * np.cos(0.3), rtol=1e-6)


def test_xla_metadata_call_closure_vmap_and_decorator_forms():
  @hlox.jit
  def f(x):
    y = x + 2
    return xla_metadata_call(lambda a: a * y, inlineable="false")(x)

  np.testing.assert_allclose(f(jnp.arange(3.0)), [0, 3, 8])

  @xla_metadata_call2({"tag": "deco"})
  def g(x):
    return x * 2

  assert 'tag = "deco"' in hlox.jit(g).lower(1.0).as_text()
  np.testing.assert_allclose(hlox.vmap(g)(jnp.arange(3.0)), [0, 2, 4])
  assert 'tag = "deco"' in hlox.jit(hlox.vmap(g)).lower(jnp.arange(3.0)).as_text()


def test_xla_metadata_call_bad_arguments():
  with pytest.raises(TypeError, match="metadata values must be"):
    xla_metadata_call(lambda x: x, bad=object())
  with pytest.raises(TypeError, match="ad_metadata must be"):
    xla_metadata_call2(jnp.sin, {"a": "b"}, ad_metadata="typo")
  with pytest.raises(TypeError, match="expected a callable"):
    xla_metadata_call2(3, {"a": "b"})
  with pytest.raises(TypeError, match="metadata must be a dict"):
    xla_metadata_call2(jnp.sin, "notadict")


# --- JAX oracle: the same ops carry the same frontend_attributes ---------------------------

_PRELUDE = """
import importlib
set_xla_metadata = importlib.import_module(m.__name__ + ".experimental.xla_metadata").set_xla_metadata
"""

_PROGRAMS = {
    "value": """
def f(x):
  return set_xla_metadata(jnp.sin(x) * jnp.cos(x), breakpoint=True)
print(m.jit(f).lower(1.0).as_text("hlo"))
""",
    "block": """
def f(x):
  with set_xla_metadata(_xla_log=True):
    y = jnp.sin(x)
    return y * jnp.cos(y)
print(m.jit(f).lower(1.0).as_text("hlo"))
""",
    "decorator": """
@set_xla_metadata(_xla_log=True)
@m.jit
def f(x):
  y = jnp.sin(x)
  return y * jnp.cos(y)
print(f.lower(1.0).as_text("hlo"))
""",
    "custom_vjp_grad": """
def fn(x):
  return jnp.sin(x) * jnp.cos(x)
@m.custom_vjp
def g(x):
  return fn(x)
def fwd(x):
  return m.vjp(fn, x)
def bwd(vjp_fn, ct):
  return set_xla_metadata(vjp_fn(ct), example="grad_tagging")
g.defvjp(fwd, bwd)
print(m.jit(m.grad(g)).lower(jnp.array(3.0)).as_text("hlo"))
""",
    "grad_in_block": """
@m.jit
def f(x, y):
  with set_xla_metadata(a="b"):
    return m.grad(lambda x: x * x * x + y * y + jnp.sin(x))(x)
print(f.lower(1.0, 2.0).as_text("hlo"))
""",
    "vmap_values": """
def f(x, y, z):
  return set_xla_metadata((x @ y + z, z - x @ y), t="v")
a = np.ones((4, 5, 6), np.float32); b = np.ones((4, 6, 5), np.float32)
c = np.ones((4, 5, 5), np.float32)
print(m.jit(m.vmap(f)).lower(a, b, c).as_text("hlo"))
""",
}

_HLO_OP = re.compile(r"^\s*(?:ROOT )?\S+ = \S+ ([a-z\-]+)\(")
_ATTRS = re.compile(r"frontend_attributes=(\{[^}]*\})")


def _ops_and_attributes(text):
  """Each HLO instruction's opcode with its frontend attributes (names differ between JAX and
  hlox; opcodes and attributes must not). Parameters are left out: JAX drops unused ones."""
  out = []
  for line in text.splitlines():
    op = _HLO_OP.match(line)
    if op and op.group(1) != "parameter":
      attrs = _ATTRS.search(line)
      out.append((op.group(1), attrs.group(1) if attrs else None))
  return sorted(out, key=lambda p: (p[0], p[1] or ""))


@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_hlo_attributes_match_jax(name):
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS, _PRELUDE)[name]
  got = printed_here(_PROGRAMS[name], _PRELUDE)
  assert "frontend_attributes" in expected
  assert _ops_and_attributes(got) == _ops_and_attributes(expected), (got, expected)
