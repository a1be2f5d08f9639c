"""The last of ``jax.numpy``'s names in ``hlox.numpy``: place, packbits/unpackbits, r_/c_,
mask_indices, poly/polydiv/polyfit/roots, histogramdd/histogram2d, einsum_path, I/O,
print options and the dtype names, against NumPy (and JAX where they differ)."""
import io

import ml_dtypes
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from tests.check_grads import check_grads
from tests.util import assert_close, check_eager_and_jit

rng = np.random.default_rng(0)


def test_every_public_jax_numpy_name_exists():
  jax_numpy = pytest.importorskip("jax.numpy")
  missing = {n for n in dir(jax_numpy) if not n.startswith("_")} - set(dir(jnp))
  assert not missing


# --- place, packbits, unpackbits ---------------------------------------------------------

def test_place_matches_numpy():
  a = np.arange(12).reshape(3, 4)
  mask, vals = a % 3 == 0, np.array([10, 20])
  expected = a.copy()
  np.place(expected, mask, vals)
  check_eager_and_jit(lambda x, m: jnp.place(x, m, vals, inplace=False), (a, mask), expected)
  more = np.arange(9)  # more values than masked entries: the extra ones are unused
  expected = a.copy()
  np.place(expected, a > 4, more)
  assert_close(hlox.jit(lambda x: jnp.place(x, x > 4, more, inplace=False))(a), expected)
  batch = rng.random((3, 3, 4)) < 0.5
  expected = []
  for m in batch:
    e = a.copy()
    np.place(e, m, [-1, -2])
    expected.append(e)
  assert_close(hlox.vmap(lambda m: jnp.place(a, m, np.array([-1, -2]), inplace=False))(batch),
               np.stack(expected))


def test_place_errors():
  a = np.arange(4)
  with pytest.raises(ValueError, match="inplace=False"):
    jnp.place(a, a > 1, np.array([1]))
  with pytest.raises(ValueError, match="same size"):
    jnp.place(a, np.ones(3, bool), np.array([1]), inplace=False)
  with pytest.raises(ValueError, match="empty"):
    jnp.place(a, a > 1, np.array([], np.int32), inplace=False)


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_packbits_unpackbits_match_numpy(axis, bitorder):
  x = rng.integers(0, 2, (3, 11)).astype(np.int32)
  packed = np.packbits(x, axis=axis, bitorder=bitorder)
  check_eager_and_jit(lambda a: jnp.packbits(a, axis=axis, bitorder=bitorder), (x,), packed,
                      np.uint8)
  for count in (None, 3, 30):
    expected = np.unpackbits(packed, axis=axis, count=count, bitorder=bitorder)
    check_eager_and_jit(lambda p: jnp.unpackbits(p, axis=axis, count=count,
                                                 bitorder=bitorder), (packed,), expected,
                        np.uint8)
  bools = rng.random((2, 3, 9)) < 0.5
  assert_close(hlox.vmap(jnp.packbits)(bools), np.stack([np.packbits(b) for b in bools]))


def test_packbits_errors():
  with pytest.raises(TypeError, match="integer or boolean"):
    jnp.packbits(np.ones(3, np.float32))
  with pytest.raises(TypeError, match="unsigned byte"):
    jnp.unpackbits(np.ones(3, np.int32))
  with pytest.raises(ValueError, match="'little' or 'big'"):
    jnp.packbits(np.ones(3, np.int32), bitorder="middle")


# --- r_, c_, mask_indices ----------------------------------------------------------------

def _index_trick_cases(m):
  return [m.r_[1:3, 5, np.array([7, 8])], m.r_[-1:1:6j, 0:3], m.r_[1:3, 2.5],
          m.r_["0,2", [1, 2, 3], [4, 5, 6]], m.r_["0,2,0", [1, 2, 3], [4, 5, 6]],
          m.r_["1,2,0", [1, 2, 3], [4, 5, 6]], m.r_["0,2,-2", [1, 2, 3], [4, 5, 6]],
          m.r_["0,3,1", np.ones((2, 2))], m.r_["r", [1, 2, 3], [4, 5, 6]],
          m.r_["c", [1, 2, 3], [4, 5, 6]], m.c_[np.ones((2, 3)), np.zeros((2, 3))],
          m.c_[[1, 2, 3], [4, 5, 6]], m.c_["0,2", [1, 2, 3], [4, 5, 6]],
          m.c_["c", [1, 2, 3], [4, 5, 6]], m.c_[0:4:4j, np.arange(4.)]]


def test_r_and_c_match_numpy():
  for got, expected in zip(_index_trick_cases(jnp), _index_trick_cases(np)):
    expected = np.asarray(expected)
    # JAX's dtypes: int32/float32 where NumPy has 64 bits.
    dtype = {"i": np.int32, "f": np.float32}[expected.dtype.kind]
    assert_close(got, expected.astype(dtype), dtype)


def test_r_under_jit_and_errors():
  f = hlox.jit(lambda x: jnp.r_[x, 0:2, x * 2])
  assert_close(f(np.ones(2, np.float32)), np.array([1, 1, 0, 1, 2, 2], np.float32))
  with pytest.raises(ValueError, match="directive"):
    jnp.r_["a,b", [1]]
  with pytest.raises(ValueError, match="beginning"):
    jnp.r_[[1], "0,2"]


def test_mask_indices_matches_numpy():
  for func, k in [(jnp.triu, 0), (jnp.triu, 1), (jnp.tril, -1)]:
    expected = np.mask_indices(4, getattr(np, func.__name__), k)
    got = jnp.mask_indices(4, func, k)
    for g, e in zip(got, expected):
      assert_close(g, e.astype(np.int32), np.int32)
  got = hlox.jit(lambda: jnp.mask_indices(3, jnp.triu, size=6))()
  assert_close(got[1], np.mask_indices(3, np.triu)[1].astype(np.int32))


# --- polynomials -------------------------------------------------------------------------

def test_poly_matches_numpy():
  zeros = np.array([1., -2., 3.5], np.float32)
  check_eager_and_jit(jnp.poly, (zeros,), np.poly(zeros), np.float32, rtol=1e-5)
  m = np.array([[1., 2.], [3., 4.]], np.float32)
  assert_close(hlox.jit(jnp.poly)(m), np.poly(m).astype(np.complex64), rtol=1e-5, atol=1e-5)
  assert_close(jnp.poly(np.zeros(0, np.float32)), np.float32(1.0))
  check_grads(jnp.poly, (zeros,), order=1, modes=("rev",), atol=2e-2, rtol=2e-2)
  batch = rng.uniform(-1, 1, (3, 3)).astype(np.float32)
  assert_close(hlox.jit(hlox.vmap(jnp.poly))(batch), np.stack([np.poly(b) for b in batch]), rtol=1e-5,
               atol=1e-5)
  with pytest.raises(ValueError, match="1d or non-empty square"):
    jnp.poly(np.ones((2, 3), np.float32))


def test_polydiv_matches_numpy():
  u, v = np.array([1., -3., 2., 5.], np.float32), np.array([2., 1.], np.float32)
  q, r = np.polydiv(u, v)
  check_eager_and_jit(lambda a, b: jnp.polydiv(a, b)[0], (u, v), q, np.float32)
  got_r = jnp.polydiv(u, v)[1]
  assert_close(got_r[-1:], r, rtol=1e-5)
  assert_close(got_r[:-1], np.zeros(3), atol=1e-6)
  assert_close(jnp.polydiv(u, v, trim_leading_zeros=True)[1], r, rtol=1e-5)
  check_grads(lambda a, b: jnp.polydiv(a, b)[0], (u, v), order=1, atol=2e-2, rtol=2e-2,
              eps=1e-2)


def test_roots_matches_numpy_and_jax():
  p = np.array([0., 1., -6., 11., -6.], np.float32)  # leading zero; roots 1, 2, 3
  got = np.sort_complex(np.asarray(jnp.roots(p)))
  np.testing.assert_allclose(got, np.sort_complex(np.roots(p)), rtol=1e-4)
  # strip_zeros=False (jit-friendly): as many values as len(p) - 1, the lost ones NaN.
  r = np.asarray(hlox.jit(lambda c: jnp.roots(c, strip_zeros=False))(p))
  assert r.shape == (4,) and np.isnan(r[-1])
  np.testing.assert_allclose(np.sort_complex(r[:-1]), [1, 2, 3], rtol=1e-4)
  assert jnp.roots(np.array([3.], np.float32)).shape == (0,)
  with pytest.raises(ValueError, match="rank-1"):
    jnp.roots(np.ones((2, 2), np.float32))


def test_polyfit_matches_numpy():
  x = np.linspace(0, 1, 12).astype(np.float32)
  y = (3 * x ** 2 + 1 + 0.05 * np.sin(20 * x)).astype(np.float32)
  x64, y64 = x.astype(np.float64), y.astype(np.float64)
  check_eager_and_jit(lambda a, b: jnp.polyfit(a, b, 2), (x, y), np.polyfit(x64, y64, 2),
                      np.float32, rtol=1e-3, atol=1e-4)
  w = np.linspace(1, 2, 12).astype(np.float32)
  y2 = np.stack([y, 2 * y], 1)
  assert_close(hlox.jit(lambda *a: jnp.polyfit(*a, 2, w=w))(x, y2), np.polyfit(x64, y2.astype(np.float64), 2, w=w),
               rtol=1e-3, atol=1e-4)
  _, cov = hlox.jit(lambda *a: jnp.polyfit(*a, 2, cov=True))(x, y)
  assert_close(cov, np.polyfit(x64, y64, 2, cov=True)[1], rtol=1e-2, atol=1e-6)
  _, cov_u = hlox.jit(lambda *a: jnp.polyfit(*a, 2, cov="unscaled"))(x, y)
  assert_close(cov_u, np.polyfit(x64, y64, 2, cov="unscaled")[1], rtol=1e-2)
  coef, resid, rank, sv, rcond = hlox.jit(lambda *a: jnp.polyfit(*a, 2, full=True))(x, y)
  ref = np.polyfit(x64, y64, 2, full=True)
  assert_close(resid, ref[1], rtol=1e-2)
  assert int(rank) == ref[2]
  assert_close(sv, ref[3], rtol=1e-4)
  ys = np.stack([y, y + 1])
  assert_close(hlox.jit(hlox.vmap(lambda b: jnp.polyfit(x, b, 1)))(ys),
               np.stack([np.polyfit(x64, b, 1) for b in ys.astype(np.float64)]), rtol=1e-3,
               atol=1e-4)
  g = hlox.grad(lambda b: jnp.polyfit(x, b, 1)[0])(y)
  # The slope of a least-squares line is linear in y: (x - mean x) / sum((x - mean x)^2).
  xc = x64 - x64.mean()
  assert_close(g, xc / (xc ** 2).sum(), rtol=1e-3, atol=1e-4)


def test_polyfit_errors():
  x = np.arange(4.)
  with pytest.raises(ValueError, match="deg >= 0"):
    jnp.polyfit(x, x, -1)
  with pytest.raises(TypeError, match="1D vector"):
    jnp.polyfit(np.ones((2, 2)), x, 1)
  with pytest.raises(TypeError, match="same length"):
    jnp.polyfit(x, x[:3], 1)


# --- histograms --------------------------------------------------------------------------

SAMPLE = rng.normal(size=(50, 3)).astype(np.float32)
WEIGHTS = rng.random(50).astype(np.float32)


@pytest.mark.parametrize("kw", [
    dict(), dict(bins=4), dict(bins=[2, 3, 4]), dict(bins=[np.linspace(-2, 2, 5)] * 3),
    dict(range=[(-1, 1), None, (0, 2)]), dict(weights=WEIGHTS), dict(density=True),
    dict(weights=WEIGHTS, density=True, bins=[2, 3, 4])], ids=str)
def test_histogramdd_matches_numpy(kw):
  hist, edges = jnp.histogramdd(SAMPLE, **kw)
  ref, ref_edges = np.histogramdd(SAMPLE, **kw)
  assert_close(hist, ref, rtol=1e-5, atol=1e-6, check_dtype=False)
  for e, r in zip(edges, ref_edges):
    assert_close(e, r, rtol=1e-6, atol=1e-6)


def test_histogramdd_under_jit_and_vmap():
  kw = dict(bins=3, range=[(-2, 2)] * 3, weights=WEIGHTS)
  ref = np.histogramdd(SAMPLE, **kw)[0]
  assert_close(hlox.jit(lambda s: jnp.histogramdd(s, **kw)[0])(SAMPLE), ref, rtol=1e-5)
  batch = np.stack([SAMPLE, SAMPLE * 0.5])
  expected = np.stack([np.histogramdd(s, **kw)[0] for s in batch])
  assert_close(hlox.vmap(lambda s: jnp.histogramdd(s, **kw)[0])(batch), expected, rtol=1e-5)


@pytest.mark.parametrize("kw", [
    dict(), dict(bins=5), dict(bins=[3, 4]), dict(bins=np.linspace(-3, 3, 7)),
    dict(bins=[np.linspace(-3, 3, 7), np.linspace(-2, 2, 4)]),
    dict(weights=WEIGHTS, density=True), dict(range=[(-1, 1), (-2, 0)])], ids=str)
def test_histogram2d_matches_numpy(kw):
  x, y = SAMPLE[:, 0], SAMPLE[:, 1]
  hist, ex, ey = jnp.histogram2d(x, y, **kw)
  ref, rx, ry = np.histogram2d(x, y, **kw)
  assert_close(hist, ref, rtol=1e-5, atol=1e-6, check_dtype=False)
  assert_close(ex, rx, rtol=1e-6, atol=1e-6)
  assert_close(ey, ry, rtol=1e-6, atol=1e-6)


def test_histogram_errors():
  with pytest.raises(ValueError, match="one weight for each sample"):
    jnp.histogramdd(SAMPLE, weights=WEIGHTS[:3])
  with pytest.raises(ValueError, match="bin for each dimension"):
    jnp.histogramdd(SAMPLE, bins=[2, 3])
  with pytest.raises(ValueError, match="range must be a sequence"):
    jnp.histogramdd(SAMPLE, range=[(0, 1)])


# --- einsum_path -------------------------------------------------------------------------

def test_einsum_path_matches_numpy():
  a, b, c = np.ones((2, 3)), np.ones((3, 40)), np.ones((40, 5))
  for optimize in ("greedy", "optimal", False, True):
    got = jnp.einsum_path("ij,jk,kl->il", a, jnp.asarray(b), c, optimize=optimize)
    assert got == np.einsum_path("ij,jk,kl->il", a, b, c, optimize=optimize)
  assert (jnp.einsum_path(a, [0, 1], b, [1, 2], [0, 2])[0] ==
          np.einsum_path(a, [0, 1], b, [1, 2], [0, 2])[0])

  def f(x):  # traced operands: only their shapes are used
    path, _ = jnp.einsum_path("ij,jk,kl->il", x, b, c)
    return jnp.einsum("ij,jk,kl->il", x, b, c, optimize=path)
  assert_close(hlox.jit(f)(a.astype(np.float32)), np.full((2, 5), 120.0, np.float32))


# --- I/O ---------------------------------------------------------------------------------

def test_frombuffer_fromstring_fromiter_fromfile(tmp_path):
  data = np.arange(6, dtype=np.int16)
  got = jnp.frombuffer(data.tobytes(), dtype=np.int16, count=4, offset=2)
  assert isinstance(got, hlox.Array)
  assert_close(got, np.frombuffer(data.tobytes(), np.int16, 4, 2), np.int16)
  assert_close(jnp.fromstring("1, 2, 3.5", sep=","), np.array([1, 2, 3.5], np.float32),
               np.float32)
  assert_close(jnp.fromiter((i * i for i in range(5)), np.int32), [0, 1, 4, 9, 16])
  data.tofile(tmp_path / "a.bin")
  assert_close(jnp.fromfile(tmp_path / "a.bin", dtype=np.int16, offset=4), data[2:])


def test_save_load_savez_round_trip(tmp_path):
  x = jnp.arange(6.).reshape(2, 3)
  buf = io.BytesIO()
  jnp.save(buf, x)
  buf.seek(0)
  y = jnp.load(buf)
  assert isinstance(y, hlox.Array)
  assert_close(y, np.asarray(x), np.float32)
  bf = x.astype(jnp.bfloat16)
  jnp.save(tmp_path / "bf.npy", bf)
  z = jnp.load(tmp_path / "bf.npy")
  assert z.dtype == ml_dtypes.bfloat16 and isinstance(z, hlox.Array)
  jnp.savez(tmp_path / "ab.npz", a=x, b=2 * x)
  with jnp.load(tmp_path / "ab.npz") as archive:
    assert_close(archive["b"], 2 * np.asarray(x))
  np.save(tmp_path / "s.npy", np.array(["a", "b"]))
  assert jnp.load(tmp_path / "s.npy").tolist() == ["a", "b"]  # strings stay NumPy


def test_from_dlpack():
  x = np.arange(5, dtype=np.float32)
  got = jnp.from_dlpack(x)
  assert isinstance(got, hlox.Array)
  assert_close(got, x, np.float32)
  # copy=False is refused when the import needs a copy: a buffer off XLA's alignment (an
  # aligned one may be shared, so whether NumPy's allocation needs a copy varies by run).
  misaligned = np.arange(6, dtype=np.float32)[1:]
  with pytest.raises(ValueError, match="copy=False"):
    jnp.from_dlpack(misaligned, copy=False)


# --- printing and dtype names ------------------------------------------------------------

def test_printoptions_apply_to_arrays():
  x = jnp.asarray([1 / 3, 2 / 3])
  assert jnp.get_printoptions() == np.get_printoptions()
  with jnp.printoptions(precision=2):
    assert repr(x) == "Array([0.33, 0.67], dtype=float32)"
    assert jnp.array_str(x) == "[0.33 0.67]"
  # NumPy's array_repr names the class, as with JAX's ArrayImpl
  assert jnp.array_repr(jnp.arange(3)) == "ArrayImpl([0, 1, 2], dtype=int32)"
  old = jnp.get_printoptions()["precision"]
  jnp.set_printoptions(precision=3)
  try:
    assert str(x) == "[0.333 0.667]"
  finally:
    jnp.set_printoptions(precision=old)


def test_dtype_names():
  for name in ["float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
               "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fnuz", "float8_e5m2fnuz",
               "float8_e8m0fnu", "int1", "int2", "uint1", "uint2"]:
    t = getattr(jnp, name)
    assert np.dtype(t) == np.dtype(getattr(ml_dtypes, name)) and t == getattr(ml_dtypes, name)
  x = jnp.float8_e4m3fnuz(1.5)
  assert x.dtype == ml_dtypes.float8_e4m3fnuz and float(x) == 1.5
  assert jnp.character is np.character and jnp.flexible is np.flexible
  assert jnp.object_ is np.object_
  assert issubclass(jnp.ComplexWarning, RuntimeWarning)
  assert jnp.ComplexWarning is np.exceptions.ComplexWarning
