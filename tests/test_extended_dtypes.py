"""User-defined extended dtypes (JAX's ``dtypes.ExtendedDType`` with ``_rules``), as flax's
fp8 layers define ``fp8_meta32``: float32 data whose cotangents accumulate with ``max``.
``convert_element_type`` moves values in and out (``to_edtype``/``from_edtype``), programs
store the physical type, and autodiff adds and makes zeros with the dtype's rules. Checked
against JAX run as an oracle."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from tests.util import printed_here, printed_in_jax

_PRELUDE = """
import dataclasses, importlib
from functools import partial
d = importlib.import_module(m.__name__ + "._src.dtypes")
lax = m.lax

class MaxRules:
  @staticmethod
  def physical_element_aval(dtype):
    return m.core.ShapedArray((), dtype.float_dtype)
  @staticmethod
  def convert_from(edtype, other):
    return edtype.float_dtype == other
  @staticmethod
  def convert_to(other, edtype):
    return edtype.float_dtype == other
  @staticmethod
  def add(dt, x, y):
    f = partial(lax.convert_element_type, new_dtype=dt.float_dtype)
    return lax.convert_element_type(lax.max(f(x), f(y)), dt)
  @staticmethod
  def zero(dt):
    return lax.convert_element_type(np.array(-np.inf, dt.float_dtype), dt)
  @staticmethod
  def tangent_dtype(dtype):
    return dtype
  @staticmethod
  def full(shape, fill_value, dtype):
    raw = lax.full(shape, lax.convert_element_type(fill_value, dtype.float_dtype),
                   dtype.float_dtype)
    return lax.convert_element_type(raw, dtype)

class max_meta(d.extended):
  pass

@dataclasses.dataclass(frozen=True)
class MaxDType(d.ExtendedDType):
  float_dtype: d.DType
  _rules: type = MaxRules
  type: type = max_meta
  def __repr__(self):
    return "maxf32"
  name = property(__repr__)

fm = MaxDType(np.dtype("float32"))

@m.custom_vjp
def tag(x, stat):
  return x * 2
def tag_fwd(x, stat):
  return x * 2, (lax.convert_element_type(jnp.abs(x).max(), fm),)
def tag_bwd(res, g):
  return g * 2, res[0]  # passes a statistic back as the "gradient" of stat
tag.defvjp(tag_fwd, tag_bwd)
"""

_PROGRAMS = {
    "convert_and_jaxpr": """
f = lambda x: lax.convert_element_type(lax.convert_element_type(x, fm), np.float32) * 2
print(m.jit(f)(jnp.arange(3.0)))
print(m.make_jaxpr(f)(jnp.arange(3.0)))
print(m.eval_shape(lambda x: lax.convert_element_type(x, fm), jnp.ones(2)).dtype)
try:
  lax.convert_element_type(jnp.ones(2, np.int32), fm)
except Exception as e:
  print(type(e).__name__)
""",
    "max_accumulation_in_a_scan": """
def outer(x, stat):
  s = lax.convert_element_type(stat, fm)
  def body(c, _):
    return tag(c, s), None
  c, _ = lax.scan(body, x, None, length=3)
  return c.sum()
g = m.jit(m.grad(outer, (0, 1)))
print(g(jnp.array([1.0, -3.0]), jnp.float32(0.0)))
print(g(jnp.array([0.5, 0.25]), jnp.float32(0.0)))
""",
    "zeros_and_sums_by_the_rules": """
def h(stat):
  s = lax.convert_element_type(stat, fm)
  a = tag(jnp.ones(2), s)
  b = tag(jnp.full(2, 5.0), s)
  return (a + b).sum()
print(m.jit(m.grad(h))(jnp.float32(1.0)))
""",
}


@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_extended_dtypes_as_jax(name):
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS, _PRELUDE)
  assert printed_here(_PROGRAMS[name], _PRELUDE) == expected[name]


def test_max_rule_accumulates_cotangents():
  ns = {"m": hlox, "jnp": jnp, "np": np}
  exec(_PRELUDE, ns)

  def outer(x, stat):
    s = lax.convert_element_type(stat, ns["fm"])
    c, _ = lax.scan(lambda c, _: (ns["tag"](c, s), None), x, None, length=3)
    return c.sum()

  dx, dstat = hlox.jit(hlox.grad(outer, (0, 1)))(jnp.array([1.0, -3.0]), jnp.float32(0.0))
  np.testing.assert_allclose(dx, [8.0, 8.0])
  # the largest |x| seen across the three steps (3, 6, 12), not their sum
  np.testing.assert_allclose(dstat, 12.0)


def test_eager_arrays_of_an_extended_dtype_are_refused():
  ns = {"m": hlox, "jnp": jnp, "np": np}
  exec(_PRELUDE, ns)
  with pytest.raises(NotImplementedError, match="inside a jit-compiled function"):
    lax.convert_element_type(jnp.ones(2), ns["fm"])
