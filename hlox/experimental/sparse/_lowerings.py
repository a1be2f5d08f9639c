"""The dtypes JAX's GPU sparse kernels accept (``jax.experimental.sparse._lowerings``).

hlox has no cuSPARSE/hipSPARSE kernels: every sparse operation is a dense composition that
takes any dtype. The lists stay so that code choosing dtypes by them keeps working.
"""
import numpy as np

SUPPORTED_DATA_DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
SUPPORTED_INDEX_DTYPES = [np.int32]
