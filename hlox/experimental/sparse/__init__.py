"""``hlox.experimental.sparse``: sparse arrays (``jax.experimental.sparse``).

Belongs here: the sparse formats (``bcoo``: batched COO, with its layout operations in
``bcoo_layout``, indexing in ``bcoo_indexing`` and products in ``bcoo_products``; ``bcsr``:
batched CSR; ``coo``; ``csr``: CSR and CSC), the format-generic constructors and ``todense_p``
(``api``), sparse-aware autodiff (``ad``), ``random_bcoo`` (``random``), ``sparsify``
(``transform``), sparse linear algebra (``linalg``: LOBPCG, ``spsolve``), and the helpers of
sparse test suites (``test_util``). All of it is written on ``hlox.numpy`` and ``hlox.lax``:
XLA on CPU has no sparse kernels, so sparse operations are dense gathers and scatter-adds on
the stored buffers, and transformations come from the compositions.
"""
from hlox.experimental.sparse import linalg  # noqa: F401
from hlox.experimental.sparse._base import JAXSparse  # noqa: F401
from hlox.experimental.sparse.ad import (  # noqa: F401
    grad, jacfwd, jacobian, jacrev, value_and_grad)
from hlox.experimental.sparse.api import empty, eye, todense, todense_p  # noqa: F401
from hlox.experimental.sparse.bcoo import (  # noqa: F401
    BCOO, bcoo_dot_general, bcoo_extract, bcoo_fromdense, bcoo_multiply_dense,
    bcoo_reduce_sum, bcoo_sort_indices, bcoo_sum_duplicates, bcoo_todense, bcoo_transpose)
from hlox.experimental.sparse.bcoo_indexing import bcoo_gather  # noqa: F401
from hlox.experimental.sparse.bcoo_layout import (  # noqa: F401
    bcoo_broadcast_in_dim, bcoo_concatenate, bcoo_dynamic_slice, bcoo_reshape, bcoo_rev,
    bcoo_slice, bcoo_squeeze, bcoo_update_layout)
from hlox.experimental.sparse.bcoo_products import (  # noqa: F401
    bcoo_conv_general_dilated, bcoo_dot_general_sampled, bcoo_multiply_sparse)
from hlox.experimental.sparse.bcsr import (  # noqa: F401
    BCSR, bcsr_broadcast_in_dim, bcsr_concatenate, bcsr_dot_general, bcsr_extract,
    bcsr_fromdense, bcsr_sum_duplicates, bcsr_todense)
from hlox.experimental.sparse.coo import (  # noqa: F401
    COO, coo_fromdense, coo_matmat, coo_matvec, coo_todense)
from hlox.experimental.sparse.csr import (  # noqa: F401
    CSC, CSR, csr_fromdense, csr_matmat, csr_matvec, csr_todense)
from hlox.experimental.sparse.random import random_bcoo  # noqa: F401
from hlox.experimental.sparse.transform import SparseTracer, sparsify  # noqa: F401
from hlox.experimental.sparse.util import (  # noqa: F401
    CuSparseEfficiencyWarning, SparseEfficiencyError, SparseEfficiencyWarning)

__all__ = ["BCOO", "BCSR", "COO", "CSC", "CSR", "CuSparseEfficiencyWarning", "JAXSparse",
           "SparseEfficiencyError", "SparseEfficiencyWarning", "SparseTracer", "bcoo_broadcast_in_dim",
           "bcoo_concatenate", "bcoo_conv_general_dilated", "bcoo_dot_general",
           "bcoo_dot_general_sampled", "bcoo_dynamic_slice", "bcoo_extract", "bcoo_fromdense",
           "bcoo_gather", "bcoo_multiply_dense", "bcoo_multiply_sparse", "bcoo_reduce_sum",
           "bcoo_reshape", "bcoo_rev", "bcoo_slice", "bcoo_sort_indices", "bcoo_squeeze",
           "bcoo_sum_duplicates", "bcoo_todense", "bcoo_transpose", "bcoo_update_layout",
           "bcsr_broadcast_in_dim", "bcsr_concatenate", "bcsr_dot_general", "bcsr_extract",
           "bcsr_fromdense", "bcsr_sum_duplicates", "bcsr_todense", "coo_fromdense",
           "coo_matmat", "coo_matvec", "coo_todense", "csr_fromdense", "csr_matmat",
           "csr_matvec", "csr_todense", "empty", "eye", "grad", "jacfwd", "jacobian", "jacrev",
           "linalg", "random_bcoo", "sparsify", "todense", "todense_p", "value_and_grad"]
