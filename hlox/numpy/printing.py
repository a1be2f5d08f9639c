"""How arrays print: NumPy's print options and ``array_repr``/``array_str``.

hlox Arrays print through NumPy (``repr`` formats the host value with
``numpy.array2string``), so NumPy's options are hlox's options: these are NumPy's own
functions, re-exported as JAX does.
"""
from __future__ import annotations

import numpy as np

__all__ = ["printoptions", "get_printoptions", "set_printoptions", "array_repr",
           "array_str"]

printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
# NumPy's versions call ``repr``/``str`` of the argument's host value, so an hlox Array
# prints as ``Array([...], dtype=...)`` and ``[...]``.
array_repr = np.array_repr
array_str = np.array_str
