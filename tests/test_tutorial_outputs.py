"""What JAX 0.10.2's tutorials print, printed alike by hlox: tracers' reprs (``JitTracer``,
``VmapTracer``, ``JVPTracer``, ``GradTracer``), the tracer errors' texts (the traced function
and the argument a value depends on), and the other texts the tutorials show.

Each program prints; the text expected is JAX's (checked against JAX itself where it is
installed)."""
import importlib.util

import pytest

from util import printed_here, printed_in_jax

PRELUDE = """
def err(f, *args):
  try:
    f(*args)
  except Exception as e:
    print(type(e).__name__ + ":", e)
"""

PROGRAMS = {
  "tracer_reprs": """
def f(x):
  print(x)
  return x
m.jit(f)(jnp.arange(5))
m.jit(f)(1.0)
m.vmap(f)(jnp.ones(3))
m.grad(f)(1.0)
m.jvp(f, (1.0,), (1.0,))
m.jit(m.grad(f))(1.0)
m.vmap(m.grad(f))(jnp.ones(3))
m.make_jaxpr(f)(jnp.ones((2, 3), 'int32'))
""",
  "bool_of_tracer": """
def f(x):
  if x > 0:
    return x
  return -x
err(m.jit(f), 1.0)
def g(x, n):
  i = 0
  while i < n:
    i += 1
  return x + i
err(m.jit(g), 10, 20)
""",
  "concretization": """
import numpy as np
err(m.jit(lambda x: int(x)), 1.0)
err(m.jit(lambda i: [1, 2, 3][i]), 1)
err(m.jit(lambda x: np.sin(x)), np.ones(3, np.float32))
err(m.jit(lambda x: x.item()), 1.0)
err(m.jit(lambda x, y: bool(x + y)), 1.0, 2.0)
err(m.make_jaxpr(lambda x: float(x)), 1.0)
def nonzero(x):
  return x[x > 0]
err(m.jit(nonzero), jnp.ones(3))
""",
  "traced_shapes": """
err(m.jit(lambda n: jnp.ones((n,))), 3)
err(m.jit(lambda n: jnp.zeros((2, n))), 3)
err(m.jit(lambda n: m.random.normal(m.random.key(0), (n,))), 3)
err(m.jit(lambda n: jnp.eye(n)), 3)
err(jnp.ones, (1.5,))
""",
  "texts": """
import numpy as np
err(m.lax.add, jnp.int32(1), jnp.float32(1))
err(m.lax.mul, jnp.ones(2, 'int8'), jnp.ones(2, 'int16'))
err(bool, jnp.ones(3))
err(bool, jnp.ones(0))
def assign(x):
  x[0] = 1
err(assign, jnp.zeros((3, 3)))
err(jnp.sum, [1, 2, 3])
err(jnp.multiply, jnp.ones(100), jnp.ones((100, 10)))
err(jnp.broadcast_shapes, (3,), (4,))
err(m.config.update, 'jax_pmap_shmap_merge', True)
print(jnp.ones(3).__array_namespace__() is jnp)
print(repr(m.random.key(0)))
print(repr(m.random.split(m.random.key(1))))
""",
  "custom_vjp_eager": """
@m.custom_vjp
def f(x):
  return jnp.sin(x)
def f_fwd(x):
  return f(x), jnp.cos(x)
def f_bwd(cos_x, y_bar):
  print(type(cos_x).__name__ == type(jnp.ones(())).__name__)
  return (cos_x * y_bar,)
f.defvjp(f_fwd, f_bwd)
y, f_vjp = m.vjp(f, 3.)
print(f_vjp(1.))
err(m.jvp, f, (3.,), (1.,))
""",
  "complex_grad": """
def f(z):
  x, y = jnp.real(z), jnp.imag(z)
  return x**2 + y**2
print(repr(m.grad(f)(3. + 4j)))
print(repr(m.vjp(jnp.real, 3. + 4j)[1](1.)))
print(repr(m.vjp(jnp.imag, 3. + 4j)[1](1.)))
""",
}

# --- tests

def _lines(*lines):
  return "".join(line + "\n" for line in lines)


EXPECTED = {
  'tracer_reprs': _lines(
    'JitTracer(int32[5])',
    'JitTracer(~float32[])',
    'VmapTracer(aval=float32[], batched=float32[3])',
    'GradTracer(primal=1.0, typeof(tangent)=f32[])',
    'JVPTracer(primal=1.0, tangent=1.0)',
    'GradTracer(primal=JitTracer(~float32[]), typeof(tangent)=f32[])',
    'GradTracer(primal=VmapTracer(aval=float32[], batched=float32[3]), typeof(tangent)=f32[])',
    'JitTracer(int32[2,3])',
  ),
  'bool_of_tracer': _lines(
    'TracerBoolConversionError: Attempted boolean conversion of traced array with shape bool[].',
    'The error occurred while tracing the function f at <string>:2 for jit. This concrete '
    'value was not available in Python because it depends on the value of the argument x.',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError',
    'TracerBoolConversionError: Attempted boolean conversion of traced array with shape bool[].',
    'The error occurred while tracing the function g at <string>:7 for jit. This concrete '
    'value was not available in Python because it depends on the value of the argument n.',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError',
  ),
  'concretization': _lines(
    'ConcretizationTypeError: Abstract tracer value encountered where concrete value is '
    'expected: traced array with shape float32[]',
    'The problem arose with the `int` function. If trying to convert the data type of a '
    'value, try using `x.astype(int)` or `jnp.array(x, int)` instead.',
    'The error occurred while tracing the function <lambda> at <string>:3 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument x.',
    '',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.ConcretizationTypeError',
    'TracerIntegerConversionError: The __index__() method was called on traced array with '
    'shape int32[]',
    'The error occurred while tracing the function <lambda> at <string>:4 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument i.',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerIntegerConversionError',
    'TracerArrayConversionError: The numpy.ndarray conversion method __array__() was '
    'called on traced array with shape float32[3]',
    'The error occurred while tracing the function <lambda> at <string>:5 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument x.',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerArrayConversionError',
    'ConcretizationTypeError: Abstract tracer value encountered where concrete value is '
    'expected: traced array with shape float32[]',
    'This occurred in the item() method of jax.Array',
    'The error occurred while tracing the function <lambda> at <string>:6 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument x.',
    '',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.ConcretizationTypeError',
    'TracerBoolConversionError: Attempted boolean conversion of traced array with shape '
    'float32[].',
    'The error occurred while tracing the function <lambda> at <string>:7 for jit. This '
    'concrete value was not available in Python because it depends on the values of the '
    'arguments x and y.',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError',
    'ConcretizationTypeError: Abstract tracer value encountered where concrete value is '
    'expected: traced array with shape float32[]',
    'The problem arose with the `float` function. If trying to convert the data type of a '
    'value, try using `x.astype(float)` or `jnp.array(x, float)` instead.',
    'The error occurred while tracing the function <lambda> at <string>:8 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument x.',
    '',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.ConcretizationTypeError',
    'NonConcreteBooleanIndexError: Array boolean indices must be concrete; got bool[3]',
    '',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.NonConcreteBooleanIndexError',
  ),
  'traced_shapes': _lines(
    'TypeError: Shapes must be 1D sequences of concrete values of integer type, got '
    '(JitTracer(~int32[]),).',
    'If using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions.',
    'The error occurred while tracing the function <lambda> at <string>:2 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument n.',
    'TypeError: Shapes must be 1D sequences of concrete values of integer type, got (2, '
    'JitTracer(~int32[])).',
    'If using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions.',
    'The error occurred while tracing the function <lambda> at <string>:3 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument n.',
    'TypeError: Shapes must be 1D sequences of concrete values of integer type, got '
    '(JitTracer(~int32[]),).',
    'If using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions.',
    'The error occurred while tracing the function <lambda> at <string>:4 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument n.',
    'TypeError: Shapes must be 1D sequences of concrete values of integer type, got '
    "(JitTracer(~int32[]),). argument of 'N' jnp.eye().",
    'If using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions.',
    'The error occurred while tracing the function <lambda> at <string>:5 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument n.',
    'TypeError: Shapes must be 1D sequences of concrete values of integer type, got (1.5,).',
  ),
  'texts': _lines(
    'TypeError: lax.add requires arguments to have the same dtypes, got int32, float32. '
    '(Tip: jnp.add is a similar function that does automatic type promotion on inputs).',
    'TypeError: lax.mul requires arguments to have the same dtypes, got int8, int16. (Tip: '
    'jnp.multiply is a similar function that does automatic type promotion on inputs).',
    'ValueError: The truth value of an array with more than one element is ambiguous. Use '
    'a.any() or a.all()',
    'ValueError: The truth value of an empty array is ambiguous. Use `array.size > 0` to '
    'check that an array is not empty.',
    'TypeError: JAX arrays are immutable and do not support in-place item assignment. '
    'Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: '
    'https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html',
    "TypeError: sum requires ndarray or scalar arguments, got <class 'list'> at position 0.",
    'ValueError: Incompatible shapes for broadcasting: shapes=[(100,), (100, 10)]',
    'ValueError: Incompatible shapes for broadcasting: shapes=[(3,), (4,)]',
    'AttributeError: Unrecognized config option: jax_pmap_shmap_merge',
    'True',
    'Array((), dtype=key<fry>) overlaying:',
    '[0 0]',
    'Array((2,), dtype=key<fry>) overlaying:',
    '[[ 507451445 1853169794]',
    ' [1948878966 4237131848]]',
  ),
  'custom_vjp_eager': _lines(
    'True',
    '(Array(-0.9899925, dtype=float32, weak_type=True),)',
    "TypeError: can't apply forward-mode autodiff (jvp) to a custom_vjp function.",
  ),
  'complex_grad': _lines(
    'Array(6.-8.j, dtype=complex64)',
    '(Array(1.+0.j, dtype=complex64),)',
    '(Array(0.-1.j, dtype=complex64),)',
  ),
}


def test_printed_as_jax_prints():
  for name, src in PROGRAMS.items():
    assert printed_here(src, PRELUDE) == EXPECTED[name], name


@pytest.mark.jax_oracle
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX not installed")
def test_expected_texts_are_jax():
  assert printed_in_jax(PROGRAMS, PRELUDE) == EXPECTED
