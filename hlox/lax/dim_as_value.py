"""``dim_as_value_p``: a symbolic dimension size as an integer scalar of the program.

Binding it is what ``int``-typed arithmetic between a symbolic size and an array does
(``x.shape[0] * x``, the count in ``jnp.mean``): the parameter ``dim`` is the symbolic
dimension, and the lowering computes its value from the program's dimension variables
(``interpreters/dim_lowering.py``). It has no eager form: a symbolic size exists only while
a function is traced for export.
"""
from __future__ import annotations

import numpy as np

from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.core.primitive import Primitive
from hlox.core.shape_poly import _array_hooks
from hlox.interpreters import dim_lowering, xla

from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["dim_as_value_p"]

dim_as_value_p = Primitive("dim_as_value")


def _dim_aval():
  # The dtype of Python int sizes: int64 with x64, else int32; weak, like a Python int.
  return ShapedArray((), np.dtype(np.int64 if dtypes.x64_enabled() else np.int32),
                     weak_type=True)


dim_as_value_p.def_abstract_eval(lambda *, dim: _dim_aval())


def _dim_as_value_impl(*, dim):
  raise NotImplementedError(
      f"the symbolic dimension '{dim}' cannot be computed eagerly: symbolic dimensions have "
      "values only inside a function exported with jax.export")

dim_as_value_p.def_impl(_dim_as_value_impl)


def _dim_as_value_lowering(ctx, *, dim):
  value = dim_lowering.dim_value(dim)
  out_type = xla.aval_to_ir_type(ctx.avals_out[0])
  return hlo.convert(out_type, value) if value.type != out_type else value

xla.register_lowering(dim_as_value_p, _dim_as_value_lowering)

_array_hooks["dim_as_value"] = lambda dim: dim_as_value_p.bind(dim=dim)
