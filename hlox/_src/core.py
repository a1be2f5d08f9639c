"""``jax._src.core``: flax's fp8 layers build their extended dtype's physical aval with
``ShapedArray`` from JAX's private core; numpyro asks ``trace_state_clean`` whether it runs
under a transformation before caching functions."""
from hlox.core.avals import ShapedArray
from hlox.core.tracer import eval_trace, trace_ctx

__all__ = ["ShapedArray", "trace_state_clean"]


def trace_state_clean() -> bool:
  """True when no transformation is in effect: eager evaluation, no named axis in scope
  (numpyro's ``cached_by`` skips its cache otherwise, so traced closures do not leak)."""
  return trace_ctx.trace is eval_trace and not trace_ctx.axis_env
