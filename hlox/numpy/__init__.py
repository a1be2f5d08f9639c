"""``hlox.numpy``: the NumPy API written on ``hlox.lax`` (no primitives, no device code)."""
import numpy as _np

from hlox.numpy.ufuncs import *  # noqa: F401,F403
from hlox.numpy.creation import *  # noqa: F401,F403
from hlox.numpy.shapes import *  # noqa: F401,F403
from hlox.numpy.indexing import *  # noqa: F401,F403
from hlox.numpy.indexing import _getitem  # noqa: F401  (Array.__getitem__)
from hlox.numpy.reductions import *  # noqa: F401,F403
from hlox.numpy.products import *  # noqa: F401,F403
from hlox.numpy.sorting import *  # noqa: F401,F403
from hlox.numpy.dtypes_api import *  # noqa: F401,F403
from hlox.numpy.extras import *  # noqa: F401,F403
from hlox.numpy import linalg  # noqa: F401
from hlox.numpy import fft  # noqa: F401

from hlox.runtime.array import Array as ndarray  # noqa: F401

from hlox.numpy import array_methods as _array_methods
_array_methods.install()
