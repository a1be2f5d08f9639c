"""``jax._src.dtypes``: the dtype names that equinox (``TypePromotionError``) and flax's
fp8 layers (``extended``, ``ExtendedDType``, ``DType``, ``finfo``, ``supports_inf``) import
from JAX's private module."""
import numpy as np

from hlox.core.dtypes import ExtendedDType, supports_inf
from hlox.dtypes import (TypePromotionError, canonicalize_dtype, extended, finfo,
                         issubdtype)

__all__ = ["DType", "ExtendedDType", "TypePromotionError", "canonicalize_dtype", "extended",
           "finfo", "issubdtype", "supports_inf"]

DType = np.dtype  # JAX's annotation for a dtype object (flax's fp8 dtype wrapper)
