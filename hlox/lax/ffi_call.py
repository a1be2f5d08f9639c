"""``ffi_call_p``: a call into a foreign function registered with XLA (``jax.ffi.ffi_call``).

The target is a C/C++ handler registered by name (``hlox.ffi.register_ffi_target``); the
call lowers to one ``stablehlo.custom_call`` of it. Its parameters are what the custom call
needs: the result types, layouts as minor-to-major dimension orders (the order XLA's
``operand_layouts`` / ``result_layouts`` use), input/output aliases, the custom-call API
version, and the attributes (keyword arguments of the call, made hashable: NumPy arrays as
``HashableArray``, dicts as ``FrozenDict``) that become the handler's attribute dictionary.

Not differentiable (``custom_jvp`` / ``custom_vjp`` say what the derivative is). Under
``vmap`` it follows ``vmap_method``: ``sequential`` loops over the examples with ``scan``,
``expand_dims`` / ``broadcast_all`` call once with a leading batch dimension (size 1 or the
batch size for unbatched operands), ``legacy_vectorized`` passes unbatched operands as they
are. ``has_side_effect=True`` keeps the call when its results are unused.
"""
from __future__ import annotations

from functools import partial

from hlox.core.avals import ShapedArray, abstract_token
from hlox.core.jaxpr import effectful_when
from hlox.core.primitive import Primitive
from hlox.interpreters import ad, batching, xla
from hlox.interpreters.mlir import custom_call, ir_attribute
from hlox.lax.base import broadcast
from hlox.lax.control_flow import scan
from hlox.runtime import ffi as runtime_ffi

__all__ = ["build_ffi_lowering_function", "default_layout", "ffi_call_p", "ffi_lowering",
           "layout_for_lowering"]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized")


class _MultiResult(Primitive):
  multiple_results = True


def _shape(aval) -> tuple:
  return () if aval is abstract_token else tuple(aval.shape)


def default_layout(aval) -> tuple:
  """Row-major, minor-to-major: ``(ndim - 1, ..., 0)``."""
  return tuple(reversed(range(len(_shape(aval)))))


def layout_for_lowering(aval, layout) -> tuple:
  """A minor-to-major dimension order for ``aval`` from ``None`` (row-major), a
  ``Layout``-like object (its ``major_to_minor``) or a minor-to-major sequence."""
  if layout is None:
    return default_layout(aval)
  major_to_minor = getattr(layout, "major_to_minor", None)
  if major_to_minor is not None:
    if getattr(layout, "tiling", None):
      raise ValueError("The FFI does not support layouts with tiling")
    return tuple(major_to_minor)[::-1]
  return tuple(layout)


# --- lowering rules ----------------------------------------------------------------------

def build_ffi_lowering_function(call_target_name: str, *, operand_layouts=None,
                                result_layouts=None, backend_config=None,
                                skip_ffi_layout_processing: bool = False, **lowering_args):
  """A function ``(ctx, *operands, **attributes)`` that emits the custom call of
  ``call_target_name`` and returns the op (JAX's ``jax.ffi.build_ffi_lowering_function``).

  Layouts given as sequences are minor-to-major (XLA's order); ``None`` is row-major.
  Keyword arguments of the returned function are the handler's attributes (custom-call API
  version 4, the default); ``backend_config`` adds attributes (a dict) or, for versions
  below 4, is the opaque string. Other ``lowering_args`` go to ``mlir.custom_call``.
  """
  def lowering(ctx, *operands, **params):
    kwargs = dict(lowering_args)
    kwargs.setdefault("api_version", 4)
    if kwargs["api_version"] >= 4:
      if backend_config is not None and not isinstance(backend_config, dict):
        raise ValueError("When api_version > 4, backend_config must be a dictionary.")
      kwargs["backend_config"] = dict(backend_config or {},
                                      **{k: ir_attribute(v) for k, v in params.items()})
    else:
      if params:
        raise ValueError(
            "The use of ffi_call attributes requires a custom call API version of at least "
            f"4; got api_version={kwargs['api_version']}.")
      kwargs["backend_config"] = backend_config
    kwargs.setdefault("result_types", [xla.aval_to_ir_type(a) for a in ctx.avals_out])
    if not skip_ffi_layout_processing:
      kwargs["operand_layouts"] = _layouts(ctx.avals_in, operand_layouts)
      kwargs["result_layouts"] = _layouts(ctx.avals_out, result_layouts)
    runtime_ffi.ensure_known_target(call_target_name)
    return custom_call(call_target_name, operands=operands, **kwargs)
  return lowering


def _layouts(avals, layouts):
  if layouts is None:
    return [default_layout(a) for a in avals]
  return [layout_for_lowering(a, layout) for a, layout in zip(avals, layouts)]


def ffi_lowering(call_target_name: str, *, operand_layouts=None, result_layouts=None,
                 backend_config=None, skip_ffi_layout_processing: bool = False,
                 **lowering_args):
  """A lowering rule (``mlir.register_lowering``) that calls the FFI target
  ``call_target_name``: as ``build_ffi_lowering_function``, returning the op's results."""
  build = build_ffi_lowering_function(
      call_target_name, operand_layouts=operand_layouts, result_layouts=result_layouts,
      backend_config=backend_config, skip_ffi_layout_processing=skip_ffi_layout_processing,
      **lowering_args)

  def rule(ctx, *operands, **params):
    return list(build(ctx, *operands, **params).results)
  return rule


# --- the primitive -----------------------------------------------------------------------

ffi_call_p = _MultiResult("ffi_call")
ffi_call_p.def_abstract_eval(lambda *avals, result_avals, **_: list(result_avals))
ffi_call_p.def_impl(partial(xla.apply_primitive, ffi_call_p))
effectful_when[ffi_call_p] = lambda params: params["has_side_effect"]


def _ffi_call_lowering(ctx, *operands, target_name, has_side_effect, input_layouts,
                       output_layouts, input_output_aliases, custom_call_api_version,
                       legacy_backend_config, attributes, **_):
  rule = ffi_lowering(target_name, has_side_effect=has_side_effect,
                      operand_layouts=input_layouts, result_layouts=output_layouts,
                      operand_output_aliases=dict(input_output_aliases),
                      api_version=custom_call_api_version,
                      backend_config=legacy_backend_config)
  # HashableArray and FrozenDict values have attribute handlers of their own.
  return rule(ctx, *operands, **dict(attributes))

xla.register_lowering(ffi_call_p, _ffi_call_lowering)


def _not_differentiable(*args, target_name, **params):
  raise ValueError(f"The FFI call to `{target_name}` cannot be differentiated. You can use "
                   "`jax.custom_jvp` or `jax.custom_vjp` to add support.")

ad.primitive_jvps[ffi_call_p] = lambda primals, tangents, **params: _not_differentiable(
    **params)
ad.primitive_transposes[ffi_call_p] = lambda cts, *args, **params: _not_differentiable(
    **params)


def _with_batch_dim(layouts, batched=None):
  """Layouts (minor-to-major) of operands or results that gained a leading batch dimension:
  the old dimensions move up by one and the batch dimension is the most major. ``batched``
  (one flag per layout) leaves the unflagged ones as they are."""
  if layouts is None:
    return None
  batched = batched or [True] * len(layouts)
  return tuple(layout if not b or layout is None else (*(d + 1 for d in layout), 0)
               for layout, b in zip(layouts, batched))


def map_sequentially(primitive, moved, dims, size, **params):
  """A call primitive's batching by ``vmap_method`` "sequential" (or "sequential_unrolled"):
  ``primitive`` bound once per batch element, in a scan over the mapped operands (``moved``:
  their batch dimension first); the results stacked along axis 0."""
  mapped = [d is not None for d in dims]

  def body(carry, xs):
    it = iter(xs)
    full = [next(it) if m else a for a, m in zip(moved, mapped)]
    return carry, primitive.bind(*full, **params)

  _, outs = scan(body, (), [a for a, m in zip(moved, mapped) if m], length=size,
                 unroll=size if params["vmap_method"] == "sequential_unrolled" else 1)
  return list(outs), [0] * len(outs)


def _ffi_call_batch(args, dims, *, vmap_method, result_avals, **params):
  size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
  moved = [a if d is None else batching.moveaxis(a, d, 0) for a, d in zip(args, dims)]
  batched_avals = tuple(a if a is abstract_token else ShapedArray((size, *a.shape), a.dtype)
                        for a in result_avals)
  if vmap_method in ("sequential", "sequential_unrolled"):
    return map_sequentially(ffi_call_p, moved, dims, size, vmap_method=vmap_method,
                            result_avals=result_avals, **params)
  if vmap_method not in VMAP_METHODS:
    raise NotImplementedError(
        "vmap is only supported for the ffi_call primitive when vmap_method is one of "
        "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
        f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
  params = dict(params, output_layouts=_with_batch_dim(params["output_layouts"]))
  if vmap_method == "legacy_vectorized":
    params["input_layouts"] = _with_batch_dim(params["input_layouts"],
                                              [d is not None for d in dims])
    operands = moved
  else:
    fill = size if vmap_method == "broadcast_all" else 1
    operands = [broadcast(a, (fill,)) if d is None else a for a, d in zip(moved, dims)]
    params["input_layouts"] = _with_batch_dim(params["input_layouts"])
  outs = ffi_call_p.bind(*operands, vmap_method=vmap_method, result_avals=batched_avals,
                         **params)
  return list(outs), [0] * len(outs)

batching.primitive_batchers[ffi_call_p] = _ffi_call_batch
