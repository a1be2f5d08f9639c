"""What XLA says about a program: HLO text, cost and memory estimates.

The views behind ``Lowered.as_text("hlo")``, ``Lowered.cost_analysis()``,
``Compiled.as_text()``, ``Compiled.cost_analysis()`` and ``Compiled.memory_analysis()``, read
from jaxlib as JAX reads them (see RUNTIME_NOTES): a lowered StableHLO module is converted to
an (unoptimised) HLO module, and a loaded executable answers for its optimised one.
"""
from __future__ import annotations

import functools

from hlox.runtime import client


def _jax_ext():
  from jaxlib import _jax
  return _jax


def _unimplemented_raises(fun):
  """``fun`` with XLA's UNIMPLEMENTED errors (a backend without the analysis) raised as
  ``NotImplementedError``, which the API turns into ``None`` as JAX does."""
  @functools.wraps(fun)
  def wrapper(*args, **kwargs):
    try:
      return fun(*args, **kwargs)
    except _jax_ext().JaxRuntimeError as e:
      if str(e).startswith("UNIMPLEMENTED"):
        raise NotImplementedError(f"{fun.__name__}: {e}") from e
      raise
  return wrapper


def hlo_computation(mlir_text: str):
  """The StableHLO module ``mlir_text`` converted to an ``XlaComputation`` (unoptimised HLO:
  XLA's passes have not run on it). Arguments stay separate parameters (no tuple)."""
  return _jax_ext().mlir.mlir_module_to_xla_computation(mlir_text, use_tuple_args=False)


def hlo_text(mlir_text: str, debug_info: bool = False) -> str:
  """The unoptimised HLO text of a StableHLO module, printed as JAX prints it (short,
  parsable; source locations only with ``debug_info``)."""
  from jaxlib import _hlo
  options = _hlo.HloPrintOptions.short_parsable()
  options.print_metadata = debug_info
  return hlo_computation(mlir_text).as_hlo_module().to_string(options)


@_unimplemented_raises
def hlo_cost_analysis(mlir_text: str) -> dict:
  """XLA's cost estimate of a StableHLO module before optimisation: a dict of floats
  (``'flops'``, ``'bytes accessed'``, ``'transcendentals'``, per-operand entries, ...)."""
  module = hlo_computation(mlir_text).as_hlo_module()
  return _jax_ext().hlo_module_cost_analysis(client.get_client(), module)


@_unimplemented_raises
def executable_cost_analysis(loaded) -> dict:
  """XLA's cost estimate of a loaded executable's optimised program (a dict of floats)."""
  return loaded.cost_analysis()


@_unimplemented_raises
def executable_memory_analysis(loaded):
  """The executable's ``CompiledMemoryStats`` (``argument_size_in_bytes``,
  ``output_size_in_bytes``, ``temp_size_in_bytes``, ``alias_size_in_bytes``,
  ``generated_code_size_in_bytes``, their ``host_`` twins, ``peak_memory_in_bytes``)."""
  return loaded.get_compiled_memory_stats()


@_unimplemented_raises
def executable_hlo_text(loaded) -> str:
  """The optimised HLO text of a loaded executable (as XLA scheduled it)."""
  if hasattr(loaded, "get_hlo_text"):
    return loaded.get_hlo_text()
  return "\n\n".join(m.to_string() for m in loaded.hlo_modules())
