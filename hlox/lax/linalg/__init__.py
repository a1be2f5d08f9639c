"""``hlox.lax.linalg``: linear-algebra primitives (JAX's ``jax.lax.linalg``).

``factorizations`` holds cholesky, triangular_solve, lu, qr and the tridiagonal solver;
``lapack`` the helpers that lower them to jaxlib's LAPACK FFI kernels on CPU; ``common`` what
the primitives share.
"""
from hlox.lax.linalg.factorizations import *  # noqa: F401,F403
from hlox.lax.linalg.spectral import *  # noqa: F401,F403
