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


# A process that turns the cache on through the public API and reports JAX's events.
_CACHE_PROGRAM = """
import json, sys
import numpy as np
import hlox, hlox.numpy as jnp
from hlox import monitoring
from hlox.experimental.compilation_cache import compilation_cache as cc
events, durations = [], {}
monitoring.register_event_listener(lambda e, **kw: events.append(e))
monitoring.register_event_duration_secs_listener(
    lambda e, d, **kw: durations.setdefault(e, []).append(d))
hlox.config.update("jax_persistent_cache_min_compile_time_secs", 0)
cc.set_cache_dir(sys.argv[1])
out = hlox.jit(lambda x: jnp.tanh(x) * 3 + 1)(np.arange(4.0, dtype=np.float32))
print(json.dumps({"out": np.asarray(out).tolist(), "events": events,
                  "durations": sorted(durations)}))
"""


def _cache_run(directory):
  import json
  import os
  import subprocess
  import sys
  env = {k: v for k, v in os.environ.items() if k != "HLOX_COMPILATION_CACHE_DIR"}
  env.update(HLOX_NUM_CPU_DEVICES="1", TF_CPP_MIN_LOG_LEVEL="3")
  done = subprocess.run([sys.executable, "-c", _CACHE_PROGRAM, str(directory)], env=env,
                        capture_output=True, text=True, timeout=300)
  assert done.returncode == 0, done.stderr[-3000:]
  return json.loads(done.stdout.strip().splitlines()[-1])


def test_set_cache_dir_second_process_hits_the_cache(tmp_path):
  want = (np.tanh(np.arange(4.0)) * 3 + 1).tolist()
  first = _cache_run(tmp_path)
  np.testing.assert_allclose(first["out"], want, rtol=1e-6)
  assert first["events"].count("/jax/compilation_cache/tasks_using_cache") == 1
  assert "/jax/compilation_cache/cache_misses" in first["events"]
  assert "/jax/compilation_cache/cache_hits" not in first["events"]
  assert "/jax/core/compile/backend_compile_duration" in first["durations"]
  assert any(tmp_path.iterdir())
  second = _cache_run(tmp_path)
  np.testing.assert_allclose(second["out"], want, rtol=1e-6)
  assert "/jax/compilation_cache/cache_hits" in second["events"]
  assert "/jax/compilation_cache/cache_misses" not in second["events"]
  assert {"/jax/compilation_cache/compile_time_saved_sec",
          "/jax/compilation_cache/cache_retrieval_time_sec"} <= set(second["durations"])


def test_compilation_cache_api_in_process(tmp_path):
  from hlox import monitoring
  from hlox.config import config
  from hlox.experimental.compilation_cache import compilation_cache as cc
  old = config.compilation_cache_dir
  events = []
  listener = lambda e, **kw: events.append(e)
  monitoring.register_event_listener(listener)
  try:
    cc.reset_cache()
    cc.initialize_cache(str(tmp_path))  # JAX's deprecated spelling of set_cache_dir
    assert config.compilation_cache_dir == str(tmp_path) and cc.is_initialized()
    hlox.jit(lambda x: x * 41 + 1)(np.float32(1.0))
    assert events[0] == "/jax/compilation_cache/tasks_using_cache"
    assert events.count("/jax/compilation_cache/tasks_using_cache") == 1
    assert "/jax/compilation_cache/compile_requests_use_cache" in events
    cc.reset_cache()  # the once-per-process report is made again; the directory stays
    assert config.compilation_cache_dir == str(tmp_path)
    hlox.jit(lambda x: x * 43 + 1)(np.float32(1.0))
    assert events.count("/jax/compilation_cache/tasks_using_cache") == 2
  finally:
    monitoring.unregister_event_listener(listener)
    cc.set_cache_dir(old)
    cc.reset_cache()
