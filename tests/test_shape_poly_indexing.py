"""Shape polymorphism beyond elementwise programs: slicing and indexing with symbolic sizes
and bounds (x[:n], x[1:], x[-1], strided and reversed slices, .at[] updates, lax.slice,
dynamic_slice, pad), loops over a symbolic length (scan, fori_loop, cumulative
reductions), arange/eye/pad/repeat/split with symbolic sizes and random draws of symbolic
shapes. Each function is exported once and called at several concrete shapes, against
NumPy; the symbolic result shapes against JAX as an oracle."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import export, lax
from hlox.errors import InconclusiveDimensionOperation


def _exported(f, specs, constraints=()):
  shapes = [tuple(s.split(",")) for s in specs]
  args = [hlox.ShapeDtypeStruct(export.symbolic_shape(",".join(s), constraints=constraints),
                                np.float32) for s in shapes]
  if len(specs) > 1:  # one scope for all the arguments
    scope_specs = export.symbolic_args_specs(
        [np.zeros((2,) * len(s), np.float32) for s in shapes], list(specs),
        constraints=constraints)
    args = list(scope_specs)
  return export.export(hlox.jit(f))(*args)


def _data(*shape):
  return (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) - 3) / 4


# Groups of (function, its NumPy reference) exported together (one export, one compile per
# concrete shape), with the symbolic spec, the concrete shapes and the constraints.
_GROUPS = {
    "indexing": ("b,3", [(2, 3), (7, 3)], (), [
        (lambda x: x[:x.shape[0] // 2], lambda x: x[:x.shape[0] // 2]),
        (lambda x: x[1:], lambda x: x[1:]),
        (lambda x: x[-1], lambda x: x[-1]),
        (lambda x: x[::-2, 1], lambda x: x[::-2, 1]),
        (lambda x: x.at[1:].set(2.0).at[-1].add(x[0]), lambda x: _at_set_add(x)),
    ]),
    "symbolic_bounds": ("c,b", [(9, 2), (10, 3)], (), [
        (lambda x: x[1::x.shape[1]], lambda x: x[1::x.shape[1]]),
        (lambda x: x[2:-x.shape[1]], lambda x: x[2:-x.shape[1]]),
        (lambda x: x[-x.shape[1]:, ::-1], lambda x: x[-x.shape[1]:, ::-1]),
    ]),
    "lax": ("b,c", [(3, 2), (6, 4)], ("b >= 3", "c >= 2"), [
        (lambda x: lax.dynamic_slice(x, (x.shape[0] - 3, 1), (2, x.shape[1] - 1)),
         lambda x: x[x.shape[0] - 3:x.shape[0] - 1, 1:]),
        (lambda x: lax.pad(lax.slice(x[:, 0], (1,), (x.shape[0] - 1,)), 0.0,
                           [(x.shape[0], 1, 1)]),
         lambda x: _pad_interior(x[1:-1, 0], x.shape[0])),
    ]),
    "loops": ("b,2", [(1, 2), (5, 2)], (), [
        (lambda x: jnp.cumsum(x, axis=0), lambda x: np.cumsum(x, 0)),
        (lambda x: lax.cumprod(x, axis=0, reverse=True),
         lambda x: np.cumprod(x[::-1], 0)[::-1]),
        (lambda x: lax.cummax(x, axis=0), lambda x: np.maximum.accumulate(x, 0)),
        (lambda x: lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(2), x),
         lambda x: _scan_ref(x)),
        (lambda x: lax.fori_loop(0, x.shape[0], lambda i, c: c * 2 + x[i], jnp.zeros(2)),
         lambda x: _fori_ref(x)),
        (hlox.grad(lambda x: jnp.sum(x[1:] * x[:-1])), lambda x: _grad_ref(x)),
    ]),
    "creation": ("2*b", [(2,), (6,)], (), [
        (lambda x: jnp.arange(x.shape[0]), lambda x: np.arange(x.shape[0])),
        (lambda x: jnp.arange(0, 5 * x.shape[0] + 1, 2),
         lambda x: np.arange(0, 5 * x.shape[0] + 1, 2)),
        (lambda x: jnp.arange(x.shape[0], 1, -x.shape[0]),
         lambda x: np.arange(x.shape[0], 1, -x.shape[0])),
        (lambda x: jnp.eye(x.shape[0]), lambda x: np.eye(x.shape[0])),
        (lambda x: jnp.pad(x, [(x.shape[0], 1)]), lambda x: np.pad(x, [(x.shape[0], 1)])),
        (lambda x: jnp.pad(x, [(1, x.shape[0])], mode="edge"),
         lambda x: np.pad(x, [(1, x.shape[0])], mode="edge")),
        (lambda x: jnp.repeat(x, 2), lambda x: np.repeat(x, 2)),
        (lambda x: jnp.split(x, 2)[1], lambda x: np.split(x, 2)[1]),
    ]),
}


def _at_set_add(x):
  y = x.copy()
  y[1:] = 2.0
  y[-1] += x[0]
  return y


def _pad_interior(x, lo):
  out = np.zeros(lo + 2 * len(x), x.dtype)
  out[lo:lo + 2 * len(x) - 1:2] = x
  return out


def _scan_ref(x):
  c, ys = np.zeros(2, np.float32), []
  for r in x:
    c, y = c + r, c * r
    ys.append(y)
  return c, np.stack(ys)


def _fori_ref(x):
  c = np.zeros(2, np.float32)
  for r in x:
    c = c * 2 + r
  return c


def _grad_ref(x):
  g = np.zeros_like(x)
  g[:-1] += x[1:]
  g[1:] += x[:-1]
  return g


@pytest.mark.parametrize("group", list(_GROUPS))
def test_exported_matches_numpy_at_several_shapes(group):
  spec, shapes, constraints, cases = _GROUPS[group]
  exp = _exported(lambda x: [f(x) for f, _ in cases], [spec], constraints)
  for shape in shapes:
    x = _data(*shape)
    results = exp.call(x)
    for k, ((_, ref), got) in enumerate(zip(cases, results)):
      got, want = hlox.tree_util.tree_leaves(got), ref(x)
      want = list(want) if isinstance(want, tuple) else [want]
      assert len(got) == len(want)
      for g, w in zip(got, want):
        assert g.shape == np.shape(w), (k, shape)
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6, err_msg=f"{k}")


def test_random_draws_with_symbolic_shapes_match_the_static_ones():
  exp = _exported(lambda x: (hlox.random.uniform(hlox.random.key(1), x.shape),
                             hlox.random.normal(hlox.random.PRNGKey(2), (x.shape[0],))), ["b,3"])
  for rows in (1, 4):
    got = exp.call(np.zeros((rows, 3), np.float32))
    np.testing.assert_array_equal(got[0], hlox.random.uniform(hlox.random.key(1), (rows, 3)))
    np.testing.assert_array_equal(got[1], hlox.random.normal(hlox.random.PRNGKey(2), (rows,)))


def test_symbolic_slicing_lowers_to_dynamic_ops():
  text = _exported(lambda x: (x[1:], lax.dynamic_slice(x, (1,), (x.shape[0] - 1,))), ["b"],
                   ("b >= 2",)).mlir_module()
  assert "stablehlo.real_dynamic_slice" in text
  assert "stablehlo.dynamic_gather" in text or "stablehlo.gather" in text


def test_inconclusive_slice_and_arange_errors():
  b, = export.symbolic_shape("b")
  spec = hlox.ShapeDtypeStruct((b,), np.float32)
  with pytest.raises(InconclusiveDimensionOperation,
                     match="must be resolved statically if it is > 0 or < 0"):
    export.export(hlox.jit(lambda x: x[::x.shape[0] - 2]))(spec)
  with pytest.raises(InconclusiveDimensionOperation,
                     match="must be resolved statically if it is > 0 or < 0"):
    export.export(hlox.jit(lambda x: jnp.arange(0, x.shape[0], x.shape[0] - 2)))(spec)
  with pytest.raises(ValueError, match="must be either dimension expressions or integers"):
    export.export(hlox.jit(lambda x: jnp.arange(0.0, x.shape[0])))(spec)


_ORACLE_PRELUDE = """
import numpy as np
jnp, lax = m.numpy, m.lax
specs = {
  "x": m.ShapeDtypeStruct(m.export.symbolic_shape("b, 3"), np.float32),
  "y": m.ShapeDtypeStruct(m.export.symbolic_shape("c, b"), np.float32),
}
progs = {
  "slices": (lambda x: (x[1:], x[:x.shape[0] // 2], x[-1], x[::-2], x[::3, ::2]), "x"),
  "bounds": (lambda y: (y[y.shape[1]:], y[:-y.shape[1]], y[2::y.shape[1]]), "y"),
  "at": (lambda x: x.at[1:].set(0.0), "x"),
  "lax": (lambda x: (lax.slice(x, (1, 0), (x.shape[0], 3), (2, 1)),
                     lax.pad(x, 0.0, [(x.shape[0], 1, 1), (0, 0, 0)])), "x"),
  "arange": (lambda x: (jnp.arange(x.shape[0]), jnp.arange(0, 5 * x.shape[0] + 1, 2),
                        jnp.arange(x.shape[0], 1, -x.shape[0])), "x"),
  "loops": (lambda x: (jnp.cumsum(x, 0), lax.scan(lambda c, r: (c + r, r), x[0], x)), "x"),
}
"""

_ORACLE_PROGRAM = """
for name, (f, arg) in progs.items():
  exp = m.export.export(m.jit(f))(specs[arg])
  print(name, [str(a.shape) for a in exp.out_avals])
"""


@pytest.mark.jax_oracle
def test_symbolic_result_shapes_match_jax():
  pytest.importorskip("jax")
  from tests.util import printed_here, printed_in_jax
  want = printed_in_jax({"p": _ORACLE_PROGRAM}, prelude=_ORACLE_PRELUDE)["p"]
  assert printed_here(_ORACLE_PROGRAM, prelude=_ORACLE_PRELUDE) == want
