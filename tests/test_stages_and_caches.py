"""``hlox.stages`` (the AOT stage types) and ``hlox.experimental.compilation_cache``."""
from __future__ import annotations

import numpy as np

import hlox
import hlox.numpy as jnp
from hlox import stages


def test_stage_types_are_what_jit_and_pmap_return():
  f = hlox.jit(lambda x, y: x * y + 1)
  assert isinstance(f, stages.Wrapped)
  traced = f.trace(2.0, 3.0)
  lowered = f.lower(2.0, 3.0)
  compiled = lowered.compile()
  assert isinstance(traced, stages.Traced) and isinstance(lowered, stages.Lowered)
  assert isinstance(compiled, stages.Compiled)
  assert float(compiled(2.0, 3.0)) == 7.0
  (args, kwargs) = lowered.args_info
  assert kwargs == {} and all(isinstance(a, stages.ArgInfo) for a in args)
  assert [a.shape for a in args] == [(), ()] and not any(a.donated for a in args)
  # a plain function is no Wrapped: it has no trace/lower
  assert not isinstance(lambda x: x, stages.Wrapped)
  p = hlox.pmap(lambda x: 2 * x).lower(jnp.ones((1, 2)))
  assert isinstance(p, stages.Lowered) and isinstance(p.compile(), stages.Compiled)
  np.testing.assert_array_equal(p.compile()(jnp.ones((1, 2))), 2 * np.ones((1, 2)))
  options: stages.CompilerOptions = {"xla_embed_ir_in_executable": True}
  assert isinstance(options, dict)
