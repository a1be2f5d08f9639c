"""Collectives (hlox.lax.psum, all_gather, all_to_all, ppermute, psum_scatter, ...) under pmap
and under vmap(axis_name=...), against NumPy references; tuple axis names over nested and
mixed pmap/vmap axes; derivatives against finite differences; errors."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax

from check_grads import check_grads_x64
from util import assert_close

N = 4  # positions of the mapped axis (conftest gives 4 CPU devices)


def rand(shape, dtype=np.float32, seed=0):
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.random(shape) < 0.5
  if dtype.kind in "iu":
    return rng.integers(0 if dtype.kind == "u" else -5, 6, size=shape).astype(dtype)
  return rng.standard_normal(shape).astype(dtype)


def pmap(f, **kw):
  return hlox.pmap(f, axis_name="i", **kw)


def vmap(f, **kw):
  return hlox.vmap(f, axis_name="i", **kw)


def test_issue_example():
  y = hlox.pmap(lambda x: x / lax.psum(x, "i"), axis_name="i")(jnp.arange(4.))
  assert_close(y, np.array([0, 1 / 6, 1 / 3, 1 / 2], np.float32))


# --- NumPy references over the stacked per-position values X[k] ---------------------------

def ref_all_gather(xs, axis, tiled):
  out = np.concatenate(list(xs), axis) if tiled else np.stack(list(xs), axis)
  return np.stack([out] * len(xs))


def ref_psum_scatter(xs, dim, tiled):
  total = xs.sum(0)
  if tiled:
    return np.stack(np.split(total, len(xs), axis=dim))
  return np.stack([np.take(total, i, axis=dim) for i in range(len(xs))])


def ref_all_to_all(xs, split, concat, tiled):
  n = len(xs)
  if tiled:
    return np.stack([np.concatenate([np.split(xs[k], n, axis=split)[i] for k in range(n)],
                                    concat) for i in range(n)])
  return np.stack([np.stack([np.take(xs[k], i, axis=split) for k in range(n)], concat)
                   for i in range(n)])


def ref_ppermute(xs, perm):
  out = np.zeros_like(xs)
  for src, dst in perm:
    out[dst] = xs[src]
  return out


def bcast(f):
  return lambda xs: np.stack([f(xs)] * len(xs))


CYCLE = [(0, 1), (1, 2), (2, 3), (3, 0)]
PARTIAL = [(0, 2), (3, 1)]

# (id, function of one position, per-position shape, dtype, reference on the stack)
CASES = [
    ("psum_f32", lambda x: lax.psum(x, "i"), (3,), np.float32, bcast(lambda xs: xs.sum(0))),
    ("psum_i32", lambda x: lax.psum(x, "i"), (2, 2), np.int32, bcast(lambda xs: xs.sum(0))),
    ("psum_bool_counts", lambda x: lax.psum(x, "i"), (5,), np.bool_,
     bcast(lambda xs: xs.sum(0).astype(np.int32))),
    ("psum_pytree", lambda x: lax.psum({"a": x, "b": (2 * x,)}, "i")["b"][0], (3,),
     np.float32, bcast(lambda xs: 2 * xs.sum(0))),
    ("psum_groups", lambda x: lax.psum(x, "i", axis_index_groups=[[0, 2], [3, 1]]), (3,),
     np.float32, lambda xs: xs[[0, 1, 0, 1]] + xs[[2, 3, 2, 3]]),
    ("pmean_f32", lambda x: lax.pmean(x, "i"), (3,), np.float32, bcast(lambda xs: xs.mean(0))),
    ("pmean_int_gives_float", lambda x: lax.pmean(x, "i"), (3,), np.int32,
     bcast(lambda xs: xs.mean(0).astype(np.float32))),
    ("pmax_f32", lambda x: lax.pmax(x, "i"), (2, 3), np.float32, bcast(lambda xs: xs.max(0))),
    ("pmax_bool", lambda x: lax.pmax(x, "i"), (6,), np.bool_, bcast(lambda xs: xs.max(0))),
    ("pmin_i32", lambda x: lax.pmin(x, "i"), (3,), np.int32, bcast(lambda xs: xs.min(0))),
    ("pmin_groups", lambda x: lax.pmin(x, "i", axis_index_groups=[[0, 1], [2, 3]]), (2,),
     np.float32, lambda xs: np.minimum(xs[[0, 0, 2, 2]], xs[[1, 1, 3, 3]])),
    ("all_gather", lambda x: lax.all_gather(x, "i"), (3,), np.float32,
     lambda xs: ref_all_gather(xs, 0, False)),
    ("all_gather_axis1_i32", lambda x: lax.all_gather(x, "i", axis=1), (2, 3), np.int32,
     lambda xs: ref_all_gather(xs, 1, False)),
    ("all_gather_neg_axis_bool", lambda x: lax.all_gather(x, "i", axis=-1), (2,), np.bool_,
     lambda xs: ref_all_gather(xs, 1, False)),
    ("all_gather_tiled", lambda x: lax.all_gather(x, "i", axis=1, tiled=True), (2, 3),
     np.float32, lambda xs: ref_all_gather(xs, 1, True)),
    ("all_gather_groups", lambda x: lax.all_gather(x, "i", axis_index_groups=[[0, 2], [3, 1]]),
     (2,), np.float32, lambda xs: np.stack([xs[[0, 2]], xs[[3, 1]], xs[[0, 2]], xs[[3, 1]]])),
    ("psum_scatter_groups", lambda x: lax.psum_scatter(x, "i", axis_index_groups=[[0, 2],
                                                                                  [3, 1]]),
     (2, 3), np.float32, lambda xs: np.stack([(xs[0] + xs[2])[0], (xs[3] + xs[1])[1],
                                              (xs[0] + xs[2])[1], (xs[3] + xs[1])[0]])),
    ("psum_scatter_groups_tiled", lambda x: lax.psum_scatter(
        x, "i", axis_index_groups=[[0, 1], [2, 3]], tiled=True, scatter_dimension=1), (2, 4),
     np.float32, lambda xs: np.stack([(xs[0] + xs[1])[:, :2], (xs[0] + xs[1])[:, 2:],
                                      (xs[2] + xs[3])[:, :2], (xs[2] + xs[3])[:, 2:]])),
    ("psum_scatter", lambda x: lax.psum_scatter(x, "i"), (4, 3), np.float32,
     lambda xs: ref_psum_scatter(xs, 0, False)),
    ("psum_scatter_dim1_i32", lambda x: lax.psum_scatter(x, "i", scatter_dimension=1),
     (2, 4), np.int32, lambda xs: ref_psum_scatter(xs, 1, False)),
    ("psum_scatter_tiled", lambda x: lax.psum_scatter(x, "i", scatter_dimension=-1,
                                                       tiled=True), (3, 8), np.float32,
     lambda xs: ref_psum_scatter(xs, 1, True)),
    ("all_to_all_0_0", lambda x: lax.all_to_all(x, "i", 0, 0), (4, 3), np.float32,
     lambda xs: ref_all_to_all(xs, 0, 0, False)),
    ("all_to_all_0_1_i32", lambda x: lax.all_to_all(x, "i", 0, 1), (4, 3), np.int32,
     lambda xs: ref_all_to_all(xs, 0, 1, False)),
    ("all_to_all_2_0_bool", lambda x: lax.all_to_all(x, "i", 2, 0), (2, 3, 4), np.bool_,
     lambda xs: ref_all_to_all(xs, 2, 0, False)),
    ("all_to_all_tiled", lambda x: lax.all_to_all(x, "i", 1, 0, tiled=True), (3, 8),
     np.float32, lambda xs: ref_all_to_all(xs, 1, 0, True)),
    ("all_to_all_tiled_same_axis", lambda x: lax.all_to_all(x, "i", 0, 0, tiled=True), (8,),
     np.float32, lambda xs: ref_all_to_all(xs, 0, 0, True)),
    ("pswapaxes", lambda x: lax.pswapaxes(x, "i", 1), (2, 4), np.float32,
     lambda xs: ref_all_to_all(xs, 1, 1, False)),
    ("ppermute_cycle", lambda x: lax.ppermute(x, "i", CYCLE), (2, 3), np.float32,
     lambda xs: ref_ppermute(xs, CYCLE)),
    ("ppermute_partial_zeros", lambda x: lax.ppermute(x, "i", PARTIAL), (3,), np.int32,
     lambda xs: ref_ppermute(xs, PARTIAL)),
    ("ppermute_bool", lambda x: lax.ppermute(x, "i", PARTIAL), (3,), np.bool_,
     lambda xs: ref_ppermute(xs, PARTIAL)),
    ("pshuffle", lambda x: lax.pshuffle(x, "i", [2, 0, 3, 1]), (3,), np.float32,
     lambda xs: xs[[2, 0, 3, 1]]),
    ("axis_index", lambda x: x * 0 + lax.axis_index("i"), (2,), np.int32,
     lambda xs: np.broadcast_to(np.arange(len(xs), dtype=np.int32)[:, None], xs.shape)),
    ("axis_size", lambda x: x * 0 + lax.axis_size("i") + lax.psum(1, "i"), (), np.int32,
     lambda xs: np.full(xs.shape, 2 * len(xs), np.int32)),
]


@pytest.mark.parametrize("fun,shape,dtype,ref", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_collective_pmap_and_vmap_match_numpy(fun, shape, dtype, ref):
  xs = rand((N,) + shape, dtype)
  expected = np.asarray(ref(xs))
  # NumPy widens sums (int32 -> int64) and means (-> float64); hlox keeps 32 bits.
  expected = expected.astype({"i": np.int32, "f": np.float32}.get(expected.dtype.kind,
                                                                    expected.dtype))
  out_p = pmap(fun)(xs)
  out_v = vmap(fun)(xs)
  assert_close(out_p, expected, expected.dtype)
  assert_close(out_v, expected, expected.dtype)


def test_all_to_all_with_groups_under_pmap():
  groups = [[0, 2], [3, 1]]
  xs = rand((N, 2, 3))
  out = pmap(lambda x: lax.all_to_all(x, "i", 0, 1, axis_index_groups=groups))(xs)
  expected = np.zeros((N, 3, 2), np.float32)
  for g in groups:
    for c, position in enumerate(g):
      expected[position] = np.stack([xs[g[k]][c] for k in range(len(g))], axis=1)
  assert_close(out, expected)


def test_unmapped_operand_under_vmap_matches_broadcast_operand():
  x = rand((8, 3))
  for f in [lambda x: lax.psum(x, "i"), lambda x: lax.all_gather(x, "i", axis=1),
            lambda x: lax.psum_scatter(x, "i", tiled=True),
            lambda x: lax.all_to_all(x, "i", 0, 1, tiled=True),
            lambda x: lax.ppermute(x, "i", PARTIAL), lambda x: lax.ppermute(x, "i", CYCLE)]:
    out = vmap(f, in_axes=None, axis_size=N)(x)
    assert_close(out, pmap(f)(np.stack([x] * N)))


def test_constants_and_jit_inside():
  # A value that is not mapped: psum is a concrete multiple, pmax the value itself.
  f = lambda x: x + lax.psum(2.0, "i") + lax.pmax(1.0, "i")
  assert_close(pmap(f)(np.zeros(N, np.float32)), np.full(N, 2.0 * N + 1, np.float32))
  g = lambda x: lax.all_gather(hlox.jit(lambda y: lax.psum_scatter(y, "i"))(x), "i")
  xs = rand((N, N))
  expected = np.stack([xs.sum(0)] * N)
  assert_close(pmap(g)(xs), expected, rtol=1e-5, atol=1e-5)
  assert_close(vmap(hlox.jit(g))(xs), expected, rtol=1e-5, atol=1e-5)
  assert_close(hlox.jit(vmap(g))(xs), expected, rtol=1e-5, atol=1e-5)


# --- tuple axis names over two axes: nested pmaps and mixes of pmap and vmap ---------------

I, J = 2, 2

TUPLE_CASES = [
    ("psum", lambda x, n: lax.psum(x, n), (3,), lambda xs: bcast(lambda v: v.sum(0))(xs)),
    ("pmean", lambda x, n: lax.pmean(x, n), (3,), lambda xs: bcast(lambda v: v.mean(0))(xs)),
    ("all_gather_tiled", lambda x, n: lax.all_gather(x, n, axis=1, tiled=True), (2, 3),
     lambda xs: ref_all_gather(xs, 1, True)),
    ("psum_scatter", lambda x, n: lax.psum_scatter(x, n, scatter_dimension=1), (2, 4),
     lambda xs: ref_psum_scatter(xs, 1, False)),
    ("all_to_all", lambda x, n: lax.all_to_all(x, n, 0, 1), (4, 2),
     lambda xs: ref_all_to_all(xs, 0, 1, False)),
    ("ppermute", lambda x, n: lax.ppermute(x, n, [(0, 3), (3, 2), (2, 0)]), (2,),
     lambda xs: ref_ppermute(xs, [(0, 3), (3, 2), (2, 0)])),
    ("axis_index", lambda x, n: x * 0 + lax.axis_index(n), (), lambda xs: np.arange(
        len(xs), dtype=np.float32)),
]

MAPS = {
    "pmap_pmap": lambda g: hlox.pmap(hlox.pmap(g, axis_name="j"), axis_name="i"),
    "pmap_vmap": lambda g: hlox.pmap(hlox.vmap(g, axis_name="j"), axis_name="i"),
    "vmap_pmap": lambda g: hlox.vmap(hlox.pmap(g, axis_name="j"), axis_name="i"),
    "vmap_vmap": lambda g: hlox.vmap(hlox.vmap(g, axis_name="j"), axis_name="i"),
}


@pytest.mark.parametrize("order", [("i", "j"), ("j", "i")], ids=["ij", "ji"])
@pytest.mark.parametrize("maps", list(MAPS), ids=list(MAPS))
@pytest.mark.parametrize("fun,shape,ref", [c[1:] for c in TUPLE_CASES],
                         ids=[c[0] for c in TUPLE_CASES])
def test_tuple_axis_names(fun, shape, ref, maps, order):
  # Over a tuple of names, positions are numbered row-major in the order the names are given:
  # the reference flattens the two mapped dimensions in that order.
  xs = rand((I, J) + shape)
  swap = order == ("j", "i")
  stacked = np.swapaxes(xs, 0, 1) if swap else xs
  expected = ref(stacked.reshape((I * J,) + shape))
  expected = expected.reshape(stacked.shape[:2] + expected.shape[1:])
  expected = np.swapaxes(expected, 0, 1) if swap else expected
  out = MAPS[maps](lambda x: fun(x, order))(xs)
  assert_close(out, expected, rtol=1e-5, atol=1e-5)


def test_collective_over_one_of_two_axes():
  xs = rand((I, J, 3))
  f = lambda x: lax.psum(x, "j") * (1 + lax.axis_index("i")) - lax.pmax(x, "i")
  expected = xs.sum(1, keepdims=True) * (1 + np.arange(I))[:, None, None] - xs.max(0)
  for name, m in MAPS.items():
    assert_close(m(f)(xs), np.broadcast_to(expected, xs.shape), rtol=1e-5, atol=1e-5)


# --- derivatives -------------------------------------------------------------------------

GRAD_CASES = [
    ("psum", lambda x: jnp.sin(lax.psum(x * x, "i")), (3,)),
    ("pmean", lambda x: lax.pmean(jnp.sin(x), "i") * x, (3,)),
    ("pmax", lambda x: lax.pmax(x, "i") * x, (3,)),
    ("pmin", lambda x: lax.pmin(x * x, "i"), (2,)),
    ("all_gather", lambda x: jnp.sin(lax.all_gather(x, "i", axis=1)), (3, 2)),
    ("all_gather_tiled", lambda x: lax.all_gather(x * x, "i", tiled=True), (2,)),
    ("psum_scatter", lambda x: jnp.cos(lax.psum_scatter(x, "i", scatter_dimension=1)), (2, 4)),
    ("psum_scatter_tiled", lambda x: lax.psum_scatter(x * x, "i", tiled=True), (8,)),
    ("all_to_all", lambda x: jnp.sin(lax.all_to_all(x, "i", 0, 1)), (4, 3)),
    ("all_to_all_tiled", lambda x: lax.all_to_all(x * x, "i", 1, 0, tiled=True), (2, 4)),
    ("ppermute", lambda x: lax.ppermute(x * x, "i", PARTIAL), (3,)),
    ("axis_index", lambda x: x * lax.axis_index("i"), (3,)),
]


@pytest.mark.ci_sample(2)
@pytest.mark.parametrize("fun,shape", [c[1:] for c in GRAD_CASES],
                         ids=[c[0] for c in GRAD_CASES])
def test_grads_of_pmap_and_vmap(fun, shape):
  xs = np.random.default_rng(1).standard_normal((N,) + shape)
  check_grads_x64(pmap(fun), (xs,), order=1)
  check_grads_x64(vmap(fun), (xs,), order=2)


@pytest.mark.parametrize("fun,shape", [c[1:] for c in GRAD_CASES if c[0] != "pmax"],
                         ids=[c[0] for c in GRAD_CASES if c[0] != "pmax"])
def test_derivatives_inside_pmap_and_vmap(fun, shape):
  # Differentiating inside the map uses the collectives' own JVP and transpose rules. The JVP
  # at each position is checked against central differences of the whole mapped function;
  # the VJP (a collective's transpose sums cotangents over positions, as in JAX) equals the VJP
  # of the whole mapped function.
  from hlox.config import enable_x64
  rng = np.random.default_rng(2)
  xs, ts = rng.standard_normal((2, N) + shape)
  with enable_x64():
    outs = np.asarray(pmap(fun)(xs))
    cts = rng.standard_normal(outs.shape)
    eps = 1e-5
    numeric = (np.asarray(pmap(fun)(xs + eps * ts)) - np.asarray(pmap(fun)(xs - eps * ts))) / (
        2 * eps)
    inner_jvp = lambda x, t: hlox.jvp(fun, (x,), (t,))[1]
    inner_vjp = lambda x, ct: hlox.vjp(fun, x)[1](ct)[0]
    outer_vjp = hlox.vjp(vmap(fun), xs)[1](cts)[0]
    for m in (pmap, vmap):
      assert_close(m(inner_jvp)(xs, ts), numeric, rtol=1e-6, atol=1e-6)
      assert_close(m(inner_vjp)(xs, cts), outer_vjp, rtol=1e-10, atol=1e-10)


def test_psum_transpose_convention():
  # As in JAX: the gradient of a per-position psum is that of the sum over positions.
  g = lambda x: hlox.grad(lambda y: lax.psum(y, "i"))(x)
  x = np.arange(N, dtype=np.float32)
  assert_close(pmap(g)(x), np.full(N, N, np.float32))
  assert_close(vmap(g)(x), np.full(N, N, np.float32))


def test_data_parallel_mean_of_gradients():
  w = np.float32(0.5)
  xs = rand((N, 5), seed=3)
  loss = lambda w, x: jnp.mean((w * x - 1.0) ** 2)
  step = lambda w, x: lax.pmean(hlox.grad(loss)(w, x), "i")
  out = pmap(step, in_axes=(None, 0))(w, xs)
  expected = np.mean([2 * np.mean((w * x - 1) * x) for x in xs])
  assert_close(out, np.full(N, expected, np.float32), rtol=1e-5, atol=1e-6)


# --- errors ------------------------------------------------------------------------------

def test_unbound_axis_name_lists_bound_names():
  xs = np.ones((N, 4), np.float32)
  with pytest.raises(NameError, match=r"unbound axis name: j .*psum.*'i'"):
    pmap(lambda x: lax.psum(x, "j"))(xs)
  with pytest.raises(NameError, match=r"unbound axis name: k .*all_gather.*'i'"):
    vmap(lambda x: lax.all_gather(x, ("i", "k")))(xs)
  with pytest.raises(NameError, match=r"unbound axis name: i .*axis_index.*none"):
    lax.axis_index("i")
  with pytest.raises(NameError, match="unbound axis name: i"):
    lax.psum(np.float32(1), "i")


@pytest.mark.parametrize("fun,match", [
    (lambda x: lax.all_to_all(x, "i", 2, 0), "all_to_all: split_axis 2 is out of bounds"),
    (lambda x: lax.all_to_all(x, "i", 0, -3), "all_to_all: concat_axis -3 is out of bounds"),
    (lambda x: lax.all_to_all(x[:3], "i", 0, 0), r"split_axis 0 .*shape \(3,\).* equal the "
     r"size of the axis 'i' \(4\)"),
    (lambda x: lax.all_to_all(x, "i", 0, 0, axis_index_groups=[[0, 1], [2, 3]]),
     r"must equal the group size of axis_index_groups \(2\)"),
    (lambda x: lax.all_to_all(x[:3], "i", 0, 0, tiled=True), "must be divisible"),
    (lambda x: lax.ppermute(x, "i", [(0, 4)]), r"pair \(0, 4\) .* out of range"),
    (lambda x: lax.ppermute(x, "i", [(0, 1), (2, 1)]), "destinations of perm must be unique"),
    (lambda x: lax.pshuffle(x, "i", [0, 0, 1, 2]), "does not represent a permutation"),
    (lambda x: lax.psum_scatter(x[:3], "i"), r"scatter_dimension 0 .*shape \(3,\)"),
    (lambda x: lax.psum_scatter(x[:3], "i", tiled=True), "must be divisible"),
    (lambda x: lax.all_gather(x, "i", axis=2), "all_gather: axis 2 is out of bounds"),
    (lambda x: lax.psum(x, "i", axis_index_groups=[[0, 1], [1, 2]]), "exactly once"),
])
def test_bad_arguments_raise_value_error(fun, match):
  with pytest.raises(ValueError, match=match):
    pmap(fun)(np.ones((N, 4), np.float32))


def test_unsupported_groups_under_vmap():
  with pytest.raises(NotImplementedError, match="all_to_all: axis_index_groups"):
    vmap(lambda x: lax.all_to_all(x, "i", 0, 0, axis_index_groups=[[0, 1], [2, 3]]))(
        np.ones((N, 2), np.float32))


def test_collectives_inside_jaxprs_of_unbatched_equations_under_vmap():
  # A jitted call, loop or branch whose operands do not depend on the vmapped axis still
  # needs the batching rule when its jaxprs use that axis (axis_index, psum).
  def climb(x):
    return lax.while_loop(lambda x: x < lax.axis_index("i"), lambda x: x + 2, x)
  zeros = np.zeros(4, np.int32)
  for f in (climb, hlox.jit(climb)):
    np.testing.assert_array_equal(hlox.vmap(f, axis_name="i")(zeros), [0, 2, 2, 4])
    np.testing.assert_array_equal(
        hlox.vmap(lambda _, x: f(x), axis_name="i", in_axes=(0, None))(zeros, 0), [0, 2, 2, 4])
  total = hlox.vmap(lambda _: hlox.jit(lambda: lax.psum(1, "i"))(), axis_name="i")(np.zeros(3))
  np.testing.assert_array_equal(total, [3, 3, 3])
  index = hlox.vmap(lambda _: lax.cond(True, lambda: lax.axis_index("i"), lambda: 0),
                    axis_name="i")(np.zeros(3))
  np.testing.assert_array_equal(index, [0, 1, 2])
