"""``hlox.numpy``: the NumPy API written on ``hlox.lax`` (no primitives, no device code).

Belongs here: JAX's ``jax.numpy`` functions, in rooms named for their job (ufuncs, creation,
shapes, indexing, reductions, products, sorting, linear algebra, ...), and the methods they
install on ``Array``. May import ``hlox.lax``, ``hlox.core``, the transformations (``api``,
``custom_derivatives``) and the runtime's ``Array`` type only; never jaxlib. Submodules import
each other directly (never this package) and form no circle.
"""
import sys as _sys

import numpy as _np

from hlox.core.tracer import Tracer as _Tracer
from hlox.runtime.array import Array as _Array

from hlox.numpy.ufuncs import *  # noqa: F401,F403
from hlox.numpy.creation import *  # noqa: F401,F403
from hlox.numpy.shapes import *  # noqa: F401,F403
from hlox.numpy.indexing import *  # noqa: F401,F403
from hlox.numpy.indexing import _getitem  # noqa: F401  (Array.__getitem__)
from hlox.numpy.reductions import *  # noqa: F401,F403
from hlox.numpy.products import *  # noqa: F401,F403
from hlox.numpy.sorting import *  # noqa: F401,F403
from hlox.numpy.dtypes_api import *  # noqa: F401,F403
from hlox.numpy.searching import *  # noqa: F401,F403
from hlox.numpy.setops import *  # noqa: F401,F403
from hlox.numpy.calculus import *  # noqa: F401,F403
from hlox.numpy.statistics import *  # noqa: F401,F403
from hlox.numpy.polynomial import *  # noqa: F401,F403
from hlox.numpy.selection import *  # noqa: F401,F403
from hlox.numpy.functional import *  # noqa: F401,F403
from hlox.numpy.index_tricks import *  # noqa: F401,F403
from hlox.numpy.arithmetic import *  # noqa: F401,F403
from hlox.numpy.predicates import *  # noqa: F401,F403
from hlox.numpy.windows import *  # noqa: F401,F403
from hlox.numpy import linalg  # noqa: F401
from hlox.numpy import fft  # noqa: F401
from hlox.numpy.ufunc_api import *  # noqa: F401,F403  (add, multiply, ... as ufuncs)
from hlox.numpy.bitpacking import *  # noqa: F401,F403
from hlox.numpy.histograms import *  # noqa: F401,F403
from hlox.numpy.io import *  # noqa: F401,F403
from hlox.numpy.printing import *  # noqa: F401,F403

from hlox.core.basearray import Array as ndarray  # noqa: F401  (tracers are ndarrays too)

from hlox.numpy import array_methods as _array_methods
_array_methods.install()

# The functions that only move elements around, which also take typed key arrays as JAX's
# do: each hands a call it refused for a key operand to ``core.extended_functions.refused``,
# which runs the implementation ``hlox.random.key_functions`` registers (a test checks the
# two agree).
ACCEPTING_KEYS = (
    "broadcast_to", "concatenate", "stack", "hstack", "vstack", "expand_dims", "squeeze",
    "tile", "where", "take", "transpose", "permute_dims", "flip", "roll", "repeat",
    "swapaxes", "moveaxis", "ravel", "atleast_1d", "atleast_2d", "atleast_3d", "copy",
    "split", "append", "zeros_like", "empty_like", "ones_like", "full_like", "zeros",
    "empty", "ones", "full", "reshape", "broadcast_arrays", "array_equal", "equal",
    "not_equal")

from hlox.numpy.array_api_info import __array_namespace_info__  # noqa: F401

__array_api_version__ = "2024.12"  # the Python array API standard's version JAX 0.10.2 names


def _array_namespace(self, *, api_version=None):
  """This module: the `Python array API <https://data-apis.org/array-api/>`_ namespace of
  arrays (``x.__array_namespace__()``)."""
  if api_version is not None and api_version != __array_api_version__:
    raise ValueError(f"{api_version=!r} is not available; available versions are: "
                     f"{[__array_api_version__]}")
  return _sys.modules[__name__]


_Array.__array_namespace__ = _Tracer.__array_namespace__ = _array_namespace
