"""A function to XLA's HLO, argument by argument (JAX's ``jax.tools.jax_to_ir``).

``jax_to_hlo(fn, [("x", ShapedArray((3,), float32)), ...], constants={"k": 2})`` jits ``fn``
with the named arguments in the listed order (they become the HLO parameters, numbered so)
and ``constants`` baked in, and returns the serialized ``HloModuleProto`` and HLO text.
``parse_shape_str("f32[3,4]")`` reads XLA's shape notation. Run as a program
(``python -m hlox.tools.jax_to_ir --fn mod.f --input_shapes "[('x', 'f32[3]')]"
--ir_human_dest out.txt``) it writes those files.
"""
from __future__ import annotations

import argparse
import ast
import functools
import importlib
import re

import numpy as np

from hlox import api
from hlox import numpy as jnp
from hlox.core.avals import ShapedArray

# XLA's element type names (as HLO text prints them) -> dtypes.
_DTYPES = {
    "pred": jnp.bool_,
    "s2": jnp.int2, "s4": jnp.int4, "s8": jnp.int8, "s16": jnp.int16, "s32": jnp.int32,
    "s64": jnp.int64,
    "u2": jnp.uint2, "u4": jnp.uint4, "u8": jnp.uint8, "u16": jnp.uint16, "u32": jnp.uint32,
    "u64": jnp.uint64,
    "bf16": jnp.bfloat16, "f16": jnp.float16, "f32": jnp.float32, "f64": jnp.float64,
    "c64": jnp.complex64, "c128": jnp.complex128,
}
# One-bit integers, where NumPy's extension types (ml_dtypes) have them.
_DTYPES.update({name: getattr(jnp, attr) for name, attr in (("s1", "int1"), ("u1", "uint1"))
                if hasattr(jnp, attr)})
_SHAPE = re.compile(rf"^({'|'.join(sorted(_DTYPES, key=len, reverse=True))})\[\s*(\d*[\d,\s]*)\]$")


def parse_shape_str(s: str) -> ShapedArray:
  """The ``ShapedArray`` of an XLA shape string such as ``"f32[1,2,3]"`` or ``"pred[]"``."""
  match = _SHAPE.match(s.strip())
  if not match:
    raise ValueError(f'Invalid shape {s}. Valid example: "f32[1,2,3]". The element type '
                     f"must be one of {list(_DTYPES)}")
  dims = match.group(2).strip()
  shape = tuple(int(d) for d in dims.split(",")) if dims else ()
  return ShapedArray(shape, np.dtype(_DTYPES[match.group(1)]))


def jax_to_ir(fn, input_shapes, *, constants=None, format):
  """``(serialized IR, readable text)`` of ``fn`` for the named arguments ``input_shapes``
  (``[(name, ShapedArray), ...]``, the program's parameters in this order) with the keyword
  arguments ``constants`` fixed. ``format``: ``"HLO"`` (an ``HloModuleProto``) or ``"TF"``
  (a TensorFlow graph, which needs ``jax2tf``: not available in hlox)."""
  constants = dict(constants or {})
  names = [name for name, _ in input_shapes]
  both = set(names) & set(constants)
  if both:
    raise ValueError("Arguments appear in both `input_shapes` and `constants`: "
                     + ", ".join(sorted(both)))
  if format != "HLO":
    if format == "TF":
      raise ValueError("Conversion to a TF graph needs jax2tf and TensorFlow, which hlox "
                       "does not provide")
    raise ValueError(f"Unknown IR format {format!r}; expected 'HLO' or 'TF'")

  def by_position(*args):
    return fn(**constants, **dict(zip(names, args)))

  args = [api.ShapeDtypeStruct(aval.shape, aval.dtype) for _, aval in input_shapes]
  computation = api.jit(by_position).lower(*args).compiler_ir("hlo")
  return computation.as_serialized_hlo_module_proto(), computation.as_hlo_text()


jax_to_hlo = functools.partial(jax_to_ir, format="HLO")
jax_to_tf = functools.partial(jax_to_ir, format="TF")


def main(argv=None) -> None:
  """The command line: convert ``--fn`` (``module.function``) and write the results."""
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--fn", required=True, help="module.function to convert")
  parser.add_argument("--input_shapes", required=True,
                      help="Python list of (name, shape string) pairs")
  parser.add_argument("--constants", default="{}", help="Python dict of constant arguments")
  parser.add_argument("--ir_format", default="HLO", choices=("HLO", "TF"))
  parser.add_argument("--ir_dest", help="file for the serialized IR")
  parser.add_argument("--ir_human_dest", help="file for the readable IR")
  opts = parser.parse_args(argv)
  if not opts.ir_dest and not opts.ir_human_dest:
    parser.error("at least one of --ir_dest and --ir_human_dest is required")
  module_name, fn_name = opts.fn.rsplit(".", 1)
  fn = getattr(importlib.import_module(module_name), fn_name)
  shapes = [(name, parse_shape_str(s)) for name, s in ast.literal_eval(opts.input_shapes)]
  constants = {k: jnp.asarray(v) if isinstance(v, list) else v
               for k, v in ast.literal_eval(opts.constants).items()}
  ir, text = jax_to_ir(fn, shapes, constants=constants, format=opts.ir_format)
  if opts.ir_dest:
    with open(opts.ir_dest, "wb") as f:
      f.write(ir)
  if opts.ir_human_dest:
    with open(opts.ir_human_dest, "w") as f:
      f.write(text)


if __name__ == "__main__":
  main()
