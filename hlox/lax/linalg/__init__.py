"""``hlox.lax.linalg``: linear-algebra primitives (JAX's ``jax.lax.linalg``).

``factorizations`` holds cholesky, triangular_solve, lu, qr and the tridiagonal solver;
``products`` ormqr, symmetric_product and cholesky_update; ``qdwh`` the polar iteration;
``lapack`` the helpers that lower them to jaxlib's LAPACK FFI kernels on CPU; ``common`` what
the primitives share.
"""
from hlox.lax.linalg.factorizations import *  # noqa: F401,F403
from hlox.lax.linalg.spectral import *  # noqa: F401,F403
from hlox.lax.linalg.products import *  # noqa: F401,F403
from hlox.lax.linalg.qdwh import *  # noqa: F401,F403
