"""``hlox.numpy.ufunc``: the fourteen built-in ufuncs and ``frompyfunc`` against NumPy's
ufunc methods (and JAX's dtypes), eagerly, under jit and vmap, with gradients and errors."""
import importlib.util
import inspect
import pydoc
import textwrap

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.numpy import ufuncs
from tests.check_grads import check_grads
from tests.util import assert_close, check_eager_and_jit, run_in_jax

# [n for n in dir(jax.numpy) if isinstance(getattr(jax.numpy, n), jax.numpy.ufunc)], 0.10.2
JAX_UFUNCS = ["add", "bitwise_and", "bitwise_or", "bitwise_xor", "logaddexp", "logaddexp2",
              "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
              "negative", "subtract"]
BINARY = [n for n in JAX_UFUNCS if n != "negative"]
INTEGER_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor"}
LOGICAL = {"logical_and", "logical_or", "logical_xor"}

rng = np.random.default_rng(0)
X = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
I = rng.integers(0, 16, (3, 4)).astype(np.int32)
B = rng.random((3, 4)) < 0.5


def _input(name):
  return I if name in INTEGER_ONLY else (B if name in LOGICAL else X)


def _np_ref(name):
  return getattr(np, name)


def test_the_ufunc_names_and_properties_match():
  names = [n for n in dir(jnp) if isinstance(getattr(jnp, n), jnp.ufunc)]
  assert sorted(names) == JAX_UFUNCS
  for name in JAX_UFUNCS:
    u, ref = getattr(jnp, name), getattr(np, name)
    assert u.__name__ == name and (u.nin, u.nout, u.nargs) == (ref.nin, ref.nout, ref.nin)
    assert u.identity == ref.identity or (u.identity is None and ref.identity is None)
    assert repr(u) == f"<hlox.numpy.ufunc '{name}'>"
  assert jnp.sin is ufuncs.sin  # sin is a plain function in JAX too


def test_calling_a_builtin_ufunc_is_the_plain_function():
  # The call must stay one frame: __call__ *is* the function from ufuncs.
  assert jnp.add.__call__ is ufuncs.add
  assert jnp.add.__doc__ == ufuncs.add.__doc__
  # help() shows the function's (multi-line, indented) docstring, line by line.
  rendered = pydoc.render_doc(jnp.add, renderer=pydoc.plaintext)
  assert all(line in rendered for line in inspect.cleandoc(ufuncs.add.__doc__).splitlines())
  assert str(inspect.signature(jnp.add)) == "(x, y, /)"
  assert_close(jnp.add(X, 1.0), X + 1, np.float32)
  assert_close(hlox.jit(jnp.multiply)(X, X), X * X, np.float32)


def test_ufuncs_hash_and_compare_and_are_static_arguments():
  assert jnp.add == jnp.add and jnp.add != jnp.multiply and hash(jnp.add) == hash(jnp.add)
  f = hlox.jit(lambda u, a: u.reduce(a), static_argnums=0)
  assert_close(f(jnp.add, X), X.sum(0), np.float32)
  assert_close(f(jnp.maximum, X), X.max(0), np.float32)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("axis", [0, 1, None])
def test_reduce_matches_numpy(name, axis):
  x = _input(name)
  ref_x = x.astype(np.float64) if x.dtype == np.float32 else x
  if name == "subtract" and axis is None:  # NumPy refuses; JAX reduces the flat array
    expected = np.subtract.reduce(ref_x.ravel())
  else:
    expected = _np_ref(name).reduce(ref_x, axis=axis)
  got = check_eager_and_jit(lambda a: getattr(jnp, name).reduce(a, axis=axis), (x,),
                            expected, check_dtype=False, rtol=1e-5, atol=1e-5)
  assert got.shape == np.shape(expected)


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "logical_or", "bitwise_xor",
                                  "logaddexp", "subtract"])
def test_reduce_options_match_numpy(name):
  x, u, ref = _input(name), getattr(jnp, name), _np_ref(name)
  kw = dict(keepdims=True, axis=1)
  assert_close(u.reduce(x, **kw), ref.reduce(x, **kw), check_dtype=False, rtol=1e-5)
  if name != "subtract":  # a tuple of axes: the fast reductions only (NumPy: reorderable)
    assert_close(u.reduce(x, axis=(0, 1)), ref.reduce(x, axis=(0, 1)), check_dtype=False,
                 rtol=1e-5)
  initial = x.flat[0]
  where = np.array([True, False, True, True])
  assert_close(u.reduce(x, axis=1, initial=initial, where=where),
               ref.reduce(x, axis=1, initial=initial, where=where), check_dtype=False,
               rtol=1e-5, atol=1e-5)
  assert_close(u.reduce(x[:0], axis=0, initial=initial),
               ref.reduce(x[:0], axis=0, initial=initial), check_dtype=False)


@pytest.mark.parametrize("name", BINARY)
def test_accumulate_matches_numpy(name):
  x = _input(name)
  expected = _np_ref(name).accumulate(x, axis=1)
  check_eager_and_jit(lambda a: getattr(jnp, name).accumulate(a, axis=1), (x,),
                      expected, check_dtype=False, rtol=1e-5, atol=1e-5)
  assert_close(getattr(jnp, name).accumulate(x), _np_ref(name).accumulate(x),
               check_dtype=False, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", BINARY)
def test_outer_matches_numpy(name):
  x = _input(name)
  a, b = x[0], x[1:, :2]
  expected = _np_ref(name).outer(a, b)
  got = check_eager_and_jit(getattr(jnp, name).outer, (a, b), expected, check_dtype=False,
                            rtol=1e-5, atol=1e-5)
  assert got.shape == (4, 2, 2)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "minimum",
                                  "bitwise_or", "logaddexp", "negative"])
def test_at_matches_numpy_with_repeated_indices(name):
  base = I.astype(np.float32)[0] if name != "bitwise_or" else I[0]
  idx = np.array([0, 2, 0, 3, 0])
  vals = np.arange(1, 6).astype(base.dtype)
  u, expected = getattr(jnp, name), base.copy()
  if name == "negative":
    _np_ref(name).at(expected, idx)
    fun = lambda a: u.at(a, idx, inplace=False)
  else:
    _np_ref(name).at(expected, idx, vals)
    fun = lambda a: u.at(a, idx, vals, inplace=False)
  check_eager_and_jit(fun, (base,), expected, check_dtype=False, rtol=1e-5)


def test_at_with_slices_scalars_and_bools():
  x = X.copy()
  expected = x.copy()
  np.add.at(expected, (slice(None), np.array([1, 1])), 2.0)
  assert_close(jnp.add.at(x, (slice(None), np.array([1, 1])), 2.0, inplace=False), expected)
  expected = x.copy()
  np.maximum.at(expected, (1, 2), 5.0)
  assert_close(jnp.maximum.at(x, (1, 2), 5.0, inplace=False), expected)
  b = np.array([False, True, False])
  assert_close(jnp.add.at(b, np.array([0, 0]), True, inplace=False), [True, True, False])


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "subtract", "bitwise_or"])
def test_reduceat_matches_numpy(name):
  x = _input(name) if name == "bitwise_or" else X
  indices = np.array([0, 3, 1, 2])
  expected = _np_ref(name).reduceat(x, indices, axis=1)
  check_eager_and_jit(lambda a: getattr(jnp, name).reduceat(a, indices, axis=1), (x,),
                      expected, check_dtype=False, rtol=1e-5)


def test_frompyfunc_builds_a_ufunc_with_every_method():
  f = jnp.frompyfunc(lambda a, b: a * b + 1, 2, 1, identity=1)
  ref = np.frompyfunc(lambda a, b: a * b + 1, 2, 1, identity=1)
  x = X[0].astype(np.float64)
  assert isinstance(f, jnp.ufunc) and (f.nin, f.nout, f.identity) == (2, 1, 1)
  as_float = lambda r: np.asarray(r, dtype=np.float64)
  assert_close(f(X[0], 2.0), as_float(ref(x, 2.0)), rtol=1e-5)
  assert_close(f.reduce(X[0]), as_float(ref.reduce(x, initial=1)), rtol=1e-5)
  assert_close(f.accumulate(X[0]), as_float(ref.accumulate(x)), rtol=1e-5)
  assert_close(f.outer(X[0], X[1]), as_float(ref.outer(x, X[1].astype(np.float64))),
               rtol=1e-5)
  assert_close(f.reduce(X[0, :0]), np.array(1.0, np.float32))
  expected = x.copy()
  for i, v in [(0, 2.0), (0, 3.0)]:
    expected[i] = expected[i] * v + 1
  assert_close(f.at(X[0], np.array([0, 0]), np.array([2.0, 3.0]), inplace=False), expected,
               rtol=1e-5)
  assert_close(hlox.jit(f.reduce)(X[0]), as_float(ref.reduce(x, initial=1)), rtol=1e-5)
  unary = jnp.frompyfunc(lambda a: 2 * a, 1, 1)
  assert_close(unary(X), 2 * X)
  assert_close(unary.at(X[0], np.array([1, 1]), inplace=False),
               X[0] * np.array([1, 4, 1, 1], np.float32))


def test_vmap_of_the_methods_matches_a_loop():
  batch = rng.uniform(-2, 2, (3, 2, 4)).astype(np.float32)
  for fun in (jnp.add.reduce, lambda a: jnp.subtract.reduce(a, axis=1),
              lambda a: jnp.subtract.accumulate(a, axis=1), jnp.multiply.accumulate,
              lambda a: jnp.add.outer(a[0], a[1]), lambda a: jnp.minimum.outer(a[0], a[1]),
              lambda a: jnp.add.at(a, (0, np.array([1, 1])), 1.0, inplace=False),
              lambda a: jnp.maximum.at(a, (0, np.array([1, 1])), 1.0, inplace=False),
              lambda a: jnp.logaddexp.reduce(a, axis=None)):
    expected = np.stack([np.asarray(fun(b)) for b in batch])
    assert_close(hlox.vmap(fun)(batch), expected, rtol=1e-5, atol=1e-6)


def test_gradients_of_the_methods():
  x = rng.uniform(0.5, 1.5, (3, 4)).astype(np.float32)
  for fun in (lambda a: jnp.multiply.reduce(a),
              lambda a: jnp.subtract.reduce(a, axis=1), jnp.multiply.accumulate,
              lambda a: jnp.subtract.accumulate(a, axis=1),
              lambda a: jnp.multiply.outer(a[0], a[1]),
              lambda a: jnp.logaddexp.reduce(a, axis=None),
              lambda a: jnp.add.at(a, np.array([0, 0]), a[1], inplace=False),
              lambda a: jnp.frompyfunc(lambda p, q: p * q, 2, 1).reduce(a)):
    check_grads(fun, (x,), order=1, atol=2e-2, rtol=2e-2, eps=1e-2)
  g = hlox.grad(lambda a: jnp.add.reduce(a, axis=None))(x)
  assert_close(g, np.ones_like(x))


def test_bad_input_raises_like_jax():
  with pytest.raises(ValueError, match="binary"):
    jnp.negative.reduce(X)
  with pytest.raises(ValueError, match="identity"):
    jnp.maximum.reduce(X, where=X > 0)
  with pytest.raises(ValueError, match="bool"):
    jnp.add.reduce(X, where=np.ones((3, 4), np.int32))
  with pytest.raises(ValueError, match="zero-size"):
    jnp.subtract.reduce(X[:0])
  with pytest.raises(ValueError, match="integer"):
    jnp.bitwise_and.reduce(X)
  with pytest.raises(NotImplementedError, match="inplace=False"):
    jnp.add.at(X, 0, 1.0)
  with pytest.raises(TypeError, match="add.reduce"):
    jnp.add.reduce([1, 2])
  with pytest.raises(ValueError, match="multiple axes"):
    jnp.add.accumulate(X, axis=None)
  with pytest.raises(ValueError, match="one-dimensional"):
    jnp.add.reduceat(X, np.zeros((2, 2), np.int32))
  with pytest.raises(NotImplementedError, match="out"):
    jnp.add.reduce(X, out=X)
  with pytest.raises(TypeError, match="takes 2 arguments"):
    jnp.frompyfunc(lambda a, b: a, 2, 1)(X)


_JAX_PROGRAMS = {  # results whose dtypes JAX defines (NumPy would give int64/float64)
    "add_reduce_i8": "jnp.add.reduce(jnp.arange(5, dtype=jnp.int8))",
    "add_reduce_bool": "jnp.add.reduce(jnp.array([True, False, True]))",
    "mul_acc_i8": "jnp.multiply.accumulate(jnp.arange(1, 5, dtype=jnp.int8))",
    "max_acc": "jnp.maximum.accumulate(jnp.array([1., 3., 2.]))",
    "sub_acc_u8": "jnp.subtract.accumulate(jnp.arange(4, dtype=jnp.uint8))",
    "lae_reduce_int": "jnp.logaddexp.reduce(jnp.arange(4))",
    "lae2_reduce": "jnp.logaddexp2.reduce(jnp.arange(4.), initial=1.)",
    "bor_reduce_u8": "jnp.bitwise_or.reduce(jnp.arange(6, dtype=jnp.uint8))",
    "land_reduce_f": "jnp.logical_and.reduce(jnp.array([1., 2., 0.]))",
    "outer_i_f": "jnp.add.outer(jnp.arange(3), jnp.arange(2.))",
    "at_sub_i": "jnp.subtract.at(jnp.arange(4), jnp.array([1, 1]), 2, inplace=False)",
    "reduceat_i": "jnp.add.reduceat(jnp.arange(6), jnp.array([0, 2, 2, 5]))",
    # Not a ufunc, but sharing this one JAX process: the order of jnp.roots' output (zero
    # roots, then the NaNs that leading zeros of p lose, last).
    "roots_nozstrip": "jnp.roots(jnp.array([0., 0., 1., 0., -4., 0.]), strip_zeros=False)",
}

_RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax.numpy as jnp
    out = {}
    for name, expr in json.loads(sys.stdin.read()).items():
      r = eval(expr)
      v = np.asarray(r).astype(np.complex128)
      out[name] = {"value": [v.real.tolist(), v.imag.tolist()], "dtype": str(r.dtype)}
    print(json.dumps(out))
""")


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed")
def test_result_dtypes_match_jax():
  expected = run_in_jax(_RUNNER, _JAX_PROGRAMS)
  for name, expr in _JAX_PROGRAMS.items():
    got = eval(expr)
    assert str(got.dtype) == expected[name]["dtype"], name
    value = np.asarray(got).astype(np.complex128)
    np.testing.assert_allclose([value.real, value.imag], expected[name]["value"],
                               rtol=1e-5, atol=1e-5, err_msg=name)
