"""``hlox.experimental.sparse``: sparse arrays (``jax.experimental.sparse``).

Belongs here: the sparse formats (``bcoo``: batched COO), the format-generic constructors
(``api``), ``sparsify`` (``transform``), and sparse linear algebra (``linalg``: LOBPCG). All of
it is written on ``hlox.numpy`` and ``hlox.lax``: XLA on CPU has no sparse kernels, so sparse
operations are dense gathers and scatter-adds on the stored buffers, and transformations
come from the compositions.
"""
from hlox.experimental.sparse import linalg  # noqa: F401
from hlox.experimental.sparse._base import JAXSparse  # noqa: F401
from hlox.experimental.sparse.api import empty, eye, todense, todense_p  # noqa: F401
from hlox.experimental.sparse.bcoo import (  # noqa: F401
    BCOO, bcoo_dot_general, bcoo_extract, bcoo_fromdense, bcoo_multiply_dense,
    bcoo_reduce_sum, bcoo_sort_indices, bcoo_sum_duplicates, bcoo_todense, bcoo_transpose)
from hlox.experimental.sparse.bcsr import (  # noqa: F401
    BCSR, bcsr_broadcast_in_dim, bcsr_concatenate, bcsr_dot_general, bcsr_extract,
    bcsr_fromdense, bcsr_sum_duplicates, bcsr_todense)
from hlox.experimental.sparse.transform import SparseTracer, sparsify  # noqa: F401
from hlox.experimental.sparse.util import (  # noqa: F401
    CuSparseEfficiencyWarning, SparseEfficiencyError, SparseEfficiencyWarning)

__all__ = ["BCOO", "BCSR", "CuSparseEfficiencyWarning", "JAXSparse", "SparseEfficiencyError",
           "SparseEfficiencyWarning", "SparseTracer", "bcoo_dot_general", "bcoo_extract",
           "bcoo_fromdense", "bcoo_multiply_dense", "bcoo_reduce_sum", "bcoo_sort_indices",
           "bcoo_sum_duplicates", "bcoo_todense", "bcoo_transpose", "bcsr_broadcast_in_dim",
           "bcsr_concatenate", "bcsr_dot_general", "bcsr_extract", "bcsr_fromdense",
           "bcsr_sum_duplicates", "bcsr_todense", "empty", "eye", "linalg", "sparsify", "todense",
           "todense_p"]
