"""``hlox.scipy.optimize``: unconstrained minimization (JAX's ``jax.scipy.optimize``).

Belongs here: ``minimize`` with its BFGS and L-BFGS drivers and the strong-Wolfe
``line_search`` they share, all written as ``lax.while_loop`` programs so that they run
under ``jit`` and ``vmap``. May import ``hlox.numpy``, ``hlox.lax`` and the transformations
(``autodiff`` for the gradients); never the runtime beyond the ``Array`` type.
"""
from hlox.scipy.optimize._line_search import line_search  # noqa: F401
from hlox.scipy.optimize._minimize import OptimizeResults, minimize  # noqa: F401
