"""The generic test-case base that ``hlox.experimental.sparse.test_util`` builds on: NumPy
random generators per test, dtype-aware closeness assertions, and the jit and NumPy
agreement checks JAX's test suites call (``assertAllClose``, ``_CompileAndCheck``...).

It needs absl's ``parameterized`` (JAX's test suites are parameterised with it) and falls back
to ``unittest`` without it. Imported only by test code.
"""
import contextlib
import functools
import unittest
import warnings
import zlib

import numpy as np

from hlox.api import jit
from hlox.core import dtypes
from hlox._tree_transform import tree_map

try:  # the parameterised tests of JAX's suites need absl's metaclass
  from absl.testing import parameterized
  _Base = parameterized.TestCase
except ImportError:  # pragma: no cover
  _Base = unittest.TestCase

# Default closeness per dtype (atol and rtol alike), as JAX's suites use; exact elsewhere.
_TOLERANCE = {
    np.dtype(dtypes.bfloat16): 1e-2, np.dtype(np.float16): 1e-3,
    np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-15,
    np.dtype(np.complex64): 1e-6, np.dtype(np.complex128): 1e-15,
}


def _dtype_of(x) -> np.dtype:
  return np.dtype(getattr(x, "dtype", None) or np.asarray(x).dtype)


def _tolerance(dtype, tol):
  if tol is None:
    return _TOLERANCE.get(np.dtype(dtype), 0)
  if isinstance(tol, dict):
    tol = {np.dtype(k): v for k, v in tol.items()}
    return tol.get(np.dtype(dtype), _TOLERANCE.get(np.dtype(dtype), 0))
  return tol


def _canonical(dtype) -> np.dtype:
  return np.dtype(dtypes.canonicalize_dtype(dtype))


def _rand(rng, sample, shape, dtype, scale=3.0):
  """Random values of ``dtype``: ``sample(*shape) * scale`` cast, complex from two draws."""
  dtype = np.dtype(dtype)
  shape = tuple(shape)
  vals = sample(*shape) * scale
  if dtypes.issubdtype(dtype, np.complexfloating):
    vals = vals + 1j * sample(*shape) * scale
  if dtype == np.bool_:
    return np.asarray(vals > 0)
  return np.asarray(vals).astype(dtype)


def rand_default(rng, scale=3):
  """A generator ``(shape, dtype) -> ndarray`` of normal values times ``scale``."""
  return functools.partial(_rand, rng, rng.randn, scale=scale)


def rand_small(rng):
  """As ``rand_default``, scaled down to magnitudes near 1e-3."""
  return functools.partial(_rand, rng, rng.randn, scale=1e-3)


class JaxTestCase(_Base):
  """Assertions and helpers shared by JAX-style test suites."""

  def setUp(self):
    super().setUp()
    # A seed from the test's name: reproducible, and different between tests.
    self._rng = np.random.RandomState(zlib.adler32(self._testMethodName.encode()))

  def rng(self):
    return self._rng

  @contextlib.contextmanager
  def assertNoWarnings(self):
    with warnings.catch_warnings():
      warnings.simplefilter("error")
      yield

  def assertDtypesMatch(self, x, y, *, canonicalize_dtypes=True):
    if isinstance(x, (bool, int, float, complex)) or isinstance(y, (bool, int, float,
                                                                     complex)):
      return  # weakly typed Python scalars have no fixed dtype to compare
    dx, dy = _dtype_of(x), _dtype_of(y)
    if canonicalize_dtypes:
      dx, dy = _canonical(dx), _canonical(dy)
    self.assertEqual(dx, dy, f"dtypes differ: {dx} != {dy}")

  def assertArraysEqual(self, x, y, *, check_dtypes=True, err_msg="",
                        allow_object_dtype=False, verbose=True):
    """``x`` and ``y`` are equal arrays (NaNs in the same places count as equal)."""
    if check_dtypes:
      self.assertDtypesMatch(x, y)
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=err_msg,
                                  verbose=verbose)

  def assertArraysAllClose(self, x, y, *, check_dtypes=True, atol=None, rtol=None,
                           err_msg=""):
    """``x`` and ``y`` have equal shapes and close values (per-dtype default tolerances)."""
    xa, ya = np.asarray(x), np.asarray(y)
    self.assertEqual(xa.shape, ya.shape, f"shapes differ: {xa.shape} != {ya.shape}")
    if check_dtypes:
      self.assertDtypesMatch(x, y)
    atol = max(_tolerance(_dtype_of(x), atol), _tolerance(_dtype_of(y), atol))
    rtol = max(_tolerance(_dtype_of(x), rtol), _tolerance(_dtype_of(y), rtol))
    if xa.dtype.kind in "biu" and ya.dtype.kind in "biu" and not atol and not rtol:
      np.testing.assert_array_equal(xa, ya, err_msg=err_msg)
      return
    cast = lambda a: a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    np.testing.assert_allclose(cast(xa), cast(ya), atol=atol, rtol=rtol, err_msg=err_msg,
                               equal_nan=True)

  def assertAllClose(self, x, y, *, check_dtypes=True, atol=None, rtol=None,
                     canonicalize_dtypes=True, err_msg=""):
    """Leaf-wise closeness over dicts and sequences of arrays and scalars."""
    if isinstance(x, dict):
      self.assertIsInstance(y, dict)
      self.assertEqual(set(x), set(y))
      for k in x:
        self.assertAllClose(x[k], y[k], check_dtypes=check_dtypes, atol=atol, rtol=rtol,
                            canonicalize_dtypes=canonicalize_dtypes, err_msg=err_msg)
    elif isinstance(x, (list, tuple)):
      self.assertIsInstance(y, (list, tuple))
      self.assertEqual(len(x), len(y))
      for a, b in zip(x, y):
        self.assertAllClose(a, b, check_dtypes=check_dtypes, atol=atol, rtol=rtol,
                            canonicalize_dtypes=canonicalize_dtypes, err_msg=err_msg)
    else:
      if check_dtypes:
        self.assertDtypesMatch(x, y, canonicalize_dtypes=canonicalize_dtypes)
      self.assertArraysAllClose(x, y, check_dtypes=False, atol=atol, rtol=rtol,
                                err_msg=err_msg)

  def _CompileAndCheck(self, fun, args_maker, *, check_dtypes=True, tol=None, rtol=None,
                       atol=None, check_cache_misses=True):
    """``jit(fun)`` agrees with ``fun`` on ``args_maker()``'s arguments."""
    del check_cache_misses
    args = args_maker()
    expected = fun(*args)
    actual = jit(fun)(*args)
    self.assertAllClose(expected, actual, check_dtypes=check_dtypes, atol=atol or tol,
                        rtol=rtol or tol)

  def _CheckAgainstNumpy(self, numpy_reference_op, lax_op, args_maker, check_dtypes=True,
                         tol=None, atol=None, rtol=None, canonicalize_dtypes=True):
    """``lax_op`` agrees with the NumPy reference (whose dtypes are canonicalized)."""
    args = args_maker()
    actual = lax_op(*args)
    expected = numpy_reference_op(*args)
    if canonicalize_dtypes:
      expected = tree_map(lambda x: np.asarray(x).astype(_canonical(np.asarray(x).dtype)),
                          expected)
    self.assertAllClose(expected, actual, check_dtypes=check_dtypes, atol=atol or tol,
                        rtol=rtol or tol, canonicalize_dtypes=canonicalize_dtypes)
