"""The ``hlox.numpy``/``nn`` functions that JAX jits without ``inline=True`` show in traced
programs as a nested ``jit`` equation named as JAX's function, with the function's dynamic
arguments (Python scalars as weak-typed literals); eagerly they stay one cached executable
per call signature, with unchanged results."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from tests.util import printed_here, printed_in_jax

_X = "x = np.arange(6.0, dtype=np.float32).reshape(2, 3) - 2.0\n"


def _jaxpr_of(body: str) -> str:
  return _X + f"print(m.make_jaxpr(lambda x: {body})(x))\n"


# Programs whose whole printed text is JAX's (nested jaxprs used more than once, or long, are
# printed once above the top level, as JAX prints them).
_PROGRAMS = {
    "where": _jaxpr_of("jnp.where(x > 1, x, 0.0)"),
    "clip": _jaxpr_of("jnp.clip(x, 0.5, 2.0)"),
    "clip_one_bound": _jaxpr_of("jnp.clip(x, max=2)"),
    "round": _jaxpr_of("jnp.round(x, 2)"),
    "flip": _jaxpr_of("jnp.flip(x, 1)"),
    "fliplr": _jaxpr_of("jnp.fliplr(x)"),
    "append": _jaxpr_of("jnp.append(x, x, axis=0)"),
    "sort": _jaxpr_of("jnp.sort(x)"),
    "iscomplex": _jaxpr_of("jnp.iscomplex(x)"),
    "ptp": _jaxpr_of("jnp.ptp(x, axis=0)"),
    "cumsum": _jaxpr_of("jnp.cumsum(x, axis=0)"),
    "isinf": _jaxpr_of("jnp.isinf(x)"),
    "trunc": _jaxpr_of("jnp.trunc(x)"),
    "sigmoid_inline": _jaxpr_of("m.nn.sigmoid(x)"),
    "gelu_inline": _jaxpr_of("m.nn.gelu(x)"),
    "relu": _jaxpr_of("m.nn.relu(x)"),
    "take": _jaxpr_of("jnp.take(x, np.array([0, 2]), axis=1)"),
    "take_traced_indices": _X + "print(m.make_jaxpr(lambda x, i: jnp.take(x, i))(x, np.arange(2)))\n",
    "logsumexp": _jaxpr_of("m.scipy.special.logsumexp(x)"),
    "logsumexp_axis": _jaxpr_of("m.scipy.special.logsumexp(x, axis=1)"),
    "logsumexp_b": _jaxpr_of("m.scipy.special.logsumexp(x, axis=0, b=x, keepdims=True)"),
    "softmax": _jaxpr_of("m.nn.softmax(x)"),
    "norm": _jaxpr_of("jnp.linalg.norm(x)"),
    "det": _jaxpr_of("jnp.linalg.det(x[:, :2])"),
    "diff": _jaxpr_of("jnp.diff(x)"),
    "cross": _jaxpr_of("jnp.cross(x, x[::-1])"),
    "kron": _jaxpr_of("jnp.kron(x, x)"),
    "argmin": _jaxpr_of("jnp.argmin(x)"),
    "var": _jaxpr_of("jnp.var(x, axis=0)"),
    "std": _jaxpr_of("jnp.std(x)"),
    "var_ddof": _jaxpr_of("jnp.var(x, axis=1, ddof=1, keepdims=True)"),
    "method_clip": _jaxpr_of("x.clip(0, 1)"),
    "method_std": _jaxpr_of("x.std(axis=1)"),
    "method_cumsum": _jaxpr_of("x.cumsum()"),
    "jit_of_clip": _jaxpr_of("m.jit(jnp.clip)(x, 0.0, 1.0)"),
    "scan_body": _X + "print(m.make_jaxpr(lambda x: m.lax.scan(lambda c, r: (c + jnp.round(r).sum(), jnp.clip(r, 0., 1.)), 0.0, x))(x))\n",
    "two_calls": _jaxpr_of("jnp.clip(x, 0.0, 1.0) + jnp.round(x)"),
    "grad_where": _X + "print(m.make_jaxpr(m.grad(lambda x: jnp.where(x > 1, x, 0.0).sum()))(x))\n",
    "vmap_clip": _X + "print(m.make_jaxpr(m.vmap(lambda x: jnp.clip(x, 0.5, 2.0)))(x))\n",
    "jvp_round": _X + "print(m.make_jaxpr(lambda x: m.jvp(jnp.round, (x,), (x,)))(x))\n",
    "jit_of_flip": _X + "print(m.make_jaxpr(m.jit(lambda x: jnp.flip(x, 0)))(x))\n",
    # The reducers' parameters (JAX's reduce_max/min carry no out_sharding).
    "reduce_max": _jaxpr_of("jnp.max(x, axis=0)"),
    "reduce_min": _jaxpr_of("m.lax.reduce_min(x, (1,))"),
    "reduce_prod": _jaxpr_of("jnp.prod(x, axis=0)"),
    "reduce_and_or": _jaxpr_of("(jnp.all(x > 1, axis=0), jnp.any(x > 1))"),
    "argmax": _jaxpr_of("jnp.argmax(x, axis=1)"),
}


@pytest.mark.jax_oracle
def test_printed_jaxprs_match_jax():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS)
  for name, src in _PROGRAMS.items():
    assert printed_here(src) == expected[name], name


def _nested_calls(jaxpr):
  return [(e.primitive.name, e.params.get("name")) for e in jaxpr.eqns]


def test_staged_calls_carry_jaxs_names_and_dynamic_arguments():
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  cases = {
      lambda x: jnp.where(x > 1, x, 0.0): ("_where", 3),
      lambda x: jnp.clip(x, 0.5, 2.0): ("clip", 3),
      lambda x: jnp.tril(x, 1): ("tril", 1),
      lambda x: jnp.var(x, axis=0): ("_var", 2),  # the array and the correction
      lambda x: jnp.linalg.norm(x): ("norm", 1),
      lambda x: jnp.isclose(x, x): ("isclose", 2),
      lambda x: jnp.flip(x): ("_flip", 1),
      lambda x: jnp.linspace(0.0, x[0, 0], 5): ("_linspace", 2),
      lambda x: jnp.take(x, np.array([0, 2]), axis=1): ("_take", 2),
  }
  for f, (name, n_args) in cases.items():
    eqn = hlox.make_jaxpr(f)(x).eqns[-1]
    assert (eqn.primitive.name, eqn.params["name"]) == ("jit", name)
    assert len(eqn.invars) == n_args, name
    assert eqn.params["keep_unused"] is False


def test_functions_jax_inlines_stay_inlined():
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  for f in (lambda x: jnp.sum(x, axis=0), lambda x: jnp.mean(x), lambda x: x @ x.T,
            lambda x: hlox.nn.sigmoid(x), lambda x: jnp.stack([x, x])):
    assert "jit" not in [e.primitive.name for e in hlox.make_jaxpr(f)(x).eqns]


def test_eager_results_and_one_executable_per_signature():
  x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
  checks = [
      (jnp.clip, (x, -1.0, 2.0), np.clip(x, -1.0, 2.0)),
      (jnp.round, (x * 10.3, 1), np.round(x * 10.3, 1)),
      (jnp.tril, (x, -1), np.tril(x, -1)),
      (jnp.triu, (x,), np.triu(x)),
      (jnp.diff, (x,), np.diff(x)),
      (jnp.flip, (x, 0), np.flip(x, 0)),
      (jnp.trace, (x,), np.trace(x)),
      (jnp.var, (x,), np.var(x)),
      (jnp.nan_to_num, (np.array([np.nan, np.inf, 1.0], np.float32),),
       np.nan_to_num(np.array([np.nan, np.inf, 1.0], np.float32))),
      (jnp.linspace, (0.0, 1.0, 5), np.linspace(0.0, 1.0, 5, dtype=np.float32)),
      (jnp.sort, (x[::-1],), np.sort(x[::-1])),
  ]
  for f, args, expected in checks:
    got = f(*args)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6, atol=1e-6)
    before = len(f._fast_cache)
    f(*args)  # the same signature: served from the call cache, nothing new compiled
    assert len(f._fast_cache) == before >= 1, f.__name__
    # Traced, the same function gives the same values.
    np.testing.assert_allclose(np.asarray(hlox.jit(f, static_argnums=tuple(
        i for i, a in enumerate(args) if isinstance(a, int)))(*args)), expected,
        rtol=1e-6, atol=1e-6)


def test_calls_that_cannot_be_staged_are_inlined():
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  # A list among the arguments is rejected as in JAX; an unhashable static value, or one
  # that the body needs concrete, runs the function itself.
  with pytest.raises(TypeError, match="clip requires ndarray or scalar arguments"):
    hlox.make_jaxpr(lambda x: jnp.clip(x, [0.5, 1.0, 1.0]))(x)
  out = hlox.jit(lambda x: jnp.where(x > 1, size=3))(x)
  np.testing.assert_array_equal(np.asarray(out[1]), [2, 0, 1])
  np.testing.assert_array_equal(np.asarray(jnp.tril(x, np.int32(1))), np.tril(x, 1))


def test_nested_calls_under_transformations():
  x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
  f = lambda x: jnp.sum(jnp.clip(x, -1.0, 1.0) ** 2 + jnp.where(x > 0, x, 0.0))
  g = hlox.grad(f)(x)
  np.testing.assert_allclose(np.asarray(g), 2 * np.clip(x, -1, 1) * (np.abs(x) < 1) +
                             (x > 0), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(hlox.vmap(hlox.grad(f))(x[:, None])),
                             np.asarray(g)[:, None], rtol=1e-6)
  y, lin = hlox.linearize(f, x)
  np.testing.assert_allclose(float(lin(np.ones_like(x))), float(np.sum(g)), rtol=1e-5)
  np.testing.assert_allclose(np.asarray(hlox.checkpoint(hlox.grad(f))(x)), np.asarray(g))
  out = hlox.lax.scan(lambda c, r: (c + jnp.round(r, 1).sum(), jnp.tril(r[None])), 0.0, x)
  np.testing.assert_allclose(float(out[0]), float(np.round(x, 1).sum()), rtol=1e-6)
