"""A direct solver for CSR matrices (``jax.experimental.sparse.linalg.spsolve``).

JAX calls cuSOLVER's sparse QR on GPU and SciPy's ``spsolve`` through a host callback on CPU.
hlox densifies the matrix and uses ``jnp.linalg.solve`` (an LU factorisation): the same
solution for the moderate sizes a sparse solve on CPU handles, with ``jit`` and derivatives
(with respect to the stored values and ``b``) from the composition.
"""
from hlox import numpy as jnp
from hlox.experimental.sparse.csr import _csr_todense

__all__ = ["spsolve"]


def spsolve(data, indices, indptr, b, tol=1e-6, reorder=1):
  """The solution ``x`` of ``A @ x == b`` for the square CSR matrix ``A`` given by ``data``,
  ``indices`` and ``indptr``. ``tol`` and ``reorder`` (the singularity threshold and the
  fill-reducing ordering of the GPU QR solver) have no effect on this dense solve."""
  del tol, reorder
  b = jnp.asarray(b)
  if b.ndim != 1:
    raise ValueError(f"spsolve: b must be a vector, got shape {b.shape}")
  n = b.shape[0]
  if jnp.shape(indptr) != (n + 1,):
    raise ValueError(f"spsolve: indptr of shape {jnp.shape(indptr)} for a system of size {n}")
  A = _csr_todense(data, indices, indptr, shape=(n, n))
  dtype = jnp.result_type(A.dtype, b.dtype)
  return jnp.linalg.solve(A.astype(dtype), b.astype(dtype))
