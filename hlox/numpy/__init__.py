"""``hlox.numpy``: the NumPy API written on ``hlox.lax`` (no primitives, no device code)."""
from hlox.numpy.ufuncs import *  # noqa: F401,F403

from hlox.numpy import array_methods as _array_methods
_array_methods.install()
