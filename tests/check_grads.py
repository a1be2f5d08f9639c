"""``check_grads`` for the tests: ``hlox.test_util``'s checks (one implementation), with the
defaults our tests were written against (order 2, tolerances 1e-5) and a float64 helper."""
from __future__ import annotations

import numpy as np

from hlox.test_util import EPS, check_jvp, check_vjp  # noqa: F401
from hlox.test_util import check_grads as _check_grads


def check_grads(f, args, order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5, eps=EPS):
  """``hlox.test_util.check_grads`` with order 2 and tolerances 1e-5 by default."""
  _check_grads(f, args, order, modes, atol, rtol, eps)


def check_grads_x64(f, args, order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6):
  """``check_grads`` in float64: x64 on, arguments as NumPy arrays."""
  from hlox.config import enable_x64
  with enable_x64():
    check_grads(f, tuple(np.asarray(a) for a in args), order, modes, atol, rtol)
