"""The persistent compilation cache: hits across processes, corrupt entries, unwritable
directories, the minimum compile time and size, LRU eviction by size."""
import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import monitoring
from hlox.config import config
from hlox.core.avals import ShapedArray
from hlox.runtime import client, compilation_cache, introspection

# A program with jit, grad, vmap, pmap, the PRNG and a LAPACK custom call (its FFI target is
# registered while lowering, so a loaded executable finds it too): every compile path.
PROGRAM = textwrap.dedent("""
    import json
    import numpy as np
    import hlox, hlox.numpy as jnp
    from hlox import lax, monitoring, random

    def loss(w, x):
      return jnp.sum(jnp.tanh(x @ w) ** 2)

    w = jnp.asarray(np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3))
    x = jnp.asarray(np.linspace(0.0, 2.0, 20, dtype=np.float32).reshape(5, 4))
    step = hlox.jit(lambda w, x: w - 0.1 * hlox.grad(loss)(w, x))
    per_row = hlox.jit(hlox.vmap(lambda r: jnp.sin(r).sum()))
    psum = hlox.pmap(lambda v: lax.psum(v * 2.0, "i"), axis_name="i")
    draw = hlox.jit(lambda k: random.normal(k, (6,)))
    a = jnp.asarray(np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], np.float32))
    solve = hlox.jit(jnp.linalg.solve)
    out = {
        "step": np.asarray(step(w, x)).tolist(),
        "per_row": np.asarray(per_row(x)).tolist(),
        "psum": np.asarray(psum(jnp.arange(4.0).reshape(2, 2))).tolist(),
        "normal": np.asarray(draw(random.PRNGKey(3))).tolist(),
        "solve": np.asarray(solve(a, jnp.ones(3))).tolist(),
        "counts": {k: monitoring.count(k) for k in
                   ("backend_compile", "persistent_cache_hit", "persistent_cache_miss")},
    }
    print(json.dumps(out))
""")


def _run_program(cache_dir, **env):
  env = dict(os.environ, HLOX_COMPILATION_CACHE_DIR=str(cache_dir),
             HLOX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", HLOX_NUM_CPU_DEVICES="2",
             TF_CPP_MIN_LOG_LEVEL="3", **env)
  out = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                       text=True)
  assert out.returncode == 0, out.stderr[-3000:]
  return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def test_second_process_compiles_nothing(tmp_path):
  first, _ = _run_program(tmp_path)
  second, _ = _run_program(tmp_path)
  assert first["counts"]["backend_compile"] > 0
  assert first["counts"]["persistent_cache_hit"] == 0
  assert first["counts"]["persistent_cache_miss"] == first["counts"]["backend_compile"]
  assert len(os.listdir(tmp_path)) == first["counts"]["backend_compile"]
  assert second["counts"]["backend_compile"] == 0
  assert second["counts"]["persistent_cache_miss"] == 0
  assert second["counts"]["persistent_cache_hit"] == first["counts"]["backend_compile"]
  # Same executables, so the same bits; and the right numbers (NumPy references).
  for name in ("step", "per_row", "psum", "normal", "solve"):
    assert first[name] == second[name], name
  w = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
  x = np.linspace(0.0, 2.0, 20).reshape(5, 4)
  t = np.tanh(x @ w)
  np.testing.assert_allclose(second["step"], w - 0.1 * x.T @ (2 * t * (1 - t ** 2)),
                             rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(second["per_row"], np.sin(x).sum(1), rtol=1e-5)
  np.testing.assert_allclose(second["psum"], [[4.0, 8.0], [4.0, 8.0]])
  a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
  np.testing.assert_allclose(second["solve"], np.linalg.solve(a, np.ones(3)), rtol=1e-5)


@pytest.mark.slow  # ~10 s; run with -m slow
def test_corrupt_entries_across_processes(tmp_path):
  _run_program(tmp_path)
  names = sorted(os.listdir(tmp_path))
  for name in names:  # truncate every entry
    path = tmp_path / name
    path.write_bytes(path.read_bytes()[:100])
  result, stderr = _run_program(tmp_path)
  assert result["counts"]["backend_compile"] == len(names)
  assert stderr.count("is corrupt") == len(names)
  again, _ = _run_program(tmp_path)  # rewritten: hits again
  assert again["counts"]["backend_compile"] == 0
  assert again["step"] == result["step"]


# --- in-process tests, on raw StableHLO compiled by the runtime (no in-memory cache) ------

OPTIONS = ("compilation_cache_dir", "enable_compilation_cache",
           "persistent_cache_min_compile_time_secs", "persistent_cache_min_entry_size_bytes",
           "compilation_cache_max_size")


@pytest.fixture
def cache_dir(tmp_path):
  old = {name: getattr(config, name) for name in OPTIONS}
  directory = tmp_path / "cache"
  config.update("jax_compilation_cache_dir", str(directory))  # JAX's spelling works too
  config.update("persistent_cache_min_compile_time_secs", 0.0)
  compilation_cache.reset_warnings()
  yield directory
  for name, value in old.items():
    config.update(name, value)
  compilation_cache.reset_warnings()


def _module(k: float) -> str:
  """A program computing ``sin(x) * k``; each ``k`` is a different cache entry."""
  return textwrap.dedent(f"""
      module {{
        func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {{
          %c = stablehlo.constant dense<{k!r}> : tensor<3xf32>
          %0 = stablehlo.sine %arg0 : tensor<3xf32>
          %1 = stablehlo.multiply %0, %c : tensor<3xf32>
          return %1 : tensor<3xf32>
        }}
      }}""")


X = np.array([0.5, -1.0, 2.0], np.float32)
AVAL = ShapedArray((3,), np.dtype(np.float32))


def _compile_and_run(k):
  """Compile ``_module(k)`` through the runtime, run it on X; (result, events)."""
  device = client.default_device()
  with monitoring.count_events() as counts:
    executable = client.compile_mlir(_module(k), device, [AVAL])
  out = np.asarray(executable.run([client.put_buffer(X, AVAL, device)])[0])
  np.testing.assert_allclose(out, np.sin(X) * np.float32(k), rtol=1e-6)
  return counts


def _entries(directory):
  return sorted(p for p in directory.iterdir() if not p.name.startswith("."))


def test_hit_in_process(cache_dir):
  first = _compile_and_run(1.25)
  assert first["backend_compile"] == 1 and first["persistent_cache_miss"] == 1
  [entry] = _entries(cache_dir)
  assert compilation_cache._check_entry(entry.read_bytes()) is not None
  second = _compile_and_run(1.25)
  assert second["backend_compile"] == 0 and second["persistent_cache_hit"] == 1
  loaded = client.compile_mlir(_module(1.25), client.default_device(), [AVAL])
  # a loaded executable still shows its program and its costs
  assert "sine" in introspection.executable_hlo_text(loaded.loaded)
  assert introspection.executable_cost_analysis(loaded.loaded)["transcendentals"] == 3.0


def _truncate(data):
  return data[:len(data) // 2]


def _flip_payload_byte(data):
  # jaxlib loads an executable with a flipped byte in its middle without complaint: only
  # the checksum tells.
  data = bytearray(data)
  data[len(data) // 2] ^= 0xFF
  return bytes(data)


def _bad_magic(data):
  return b"NOTHLOX!" + data[8:]


def _valid_header_junk_payload(data):
  # Header and checksum are right, but jaxlib cannot parse the executable.
  import hashlib
  junk = b"junk" * 64
  h = compilation_cache._HEADER
  return h.pack(compilation_cache._MAGIC, compilation_cache._FORMAT_VERSION, len(junk), 0.0,
                hashlib.sha256(junk).digest()) + junk


@pytest.mark.parametrize("corrupt", [_truncate, _flip_payload_byte, _bad_magic,
                                     _valid_header_junk_payload, lambda data: b""])
def test_corrupt_entry_is_deleted_and_recompiled(cache_dir, corrupt):
  _compile_and_run(2.5)
  [entry] = _entries(cache_dir)
  good = entry.read_bytes()
  entry.write_bytes(corrupt(good))
  with pytest.warns(UserWarning, match=f"entry {entry}.*deleted it and compiling again"):
    counts = _compile_and_run(2.5)
  assert counts["backend_compile"] == 1 and counts["persistent_cache_hit"] == 0
  [rewritten] = _entries(cache_dir)
  assert rewritten == entry
  assert compilation_cache._check_entry(rewritten.read_bytes()) is not None
  assert _compile_and_run(2.5)["persistent_cache_hit"] == 1


def test_unwritable_directory_is_one_warning(tmp_path, cache_dir):
  blocker = tmp_path / "not_a_dir"
  blocker.write_text("a file where the cache directory should be")
  config.update("compilation_cache_dir", str(blocker / "cache"))
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    assert _compile_and_run(3.0)["backend_compile"] == 1
    assert _compile_and_run(3.5)["backend_compile"] == 1
  messages = [str(w.message) for w in caught]
  assert len(messages) == 1 and "cannot write to" in messages[0], messages


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root ignores directory permissions")
def test_read_only_directory(cache_dir):
  cache_dir.mkdir()
  cache_dir.chmod(0o500)
  try:
    with pytest.warns(UserWarning, match="cannot write to"):
      assert _compile_and_run(4.0)["backend_compile"] == 1
    assert _entries(cache_dir) == []
  finally:
    cache_dir.chmod(0o700)


def test_min_compile_time_and_entry_size(cache_dir, caplog):
  config.update("persistent_cache_min_compile_time_secs", 1e6)
  config.update("explain_cache_misses", True)
  try:
    with caplog.at_level("WARNING", logger="hlox"):
      assert _compile_and_run(5.0)["persistent_cache_miss"] == 1
  finally:
    config.update("explain_cache_misses", False)
  assert "under persistent_cache_min_compile_time_secs" in caplog.text
  assert not cache_dir.exists() or _entries(cache_dir) == []
  assert _compile_and_run(5.0)["backend_compile"] == 1  # nothing was written
  config.update("persistent_cache_min_compile_time_secs", 0.0)
  config.update("persistent_cache_min_entry_size_bytes", 10 ** 9)
  _compile_and_run(5.0)
  assert not cache_dir.exists() or _entries(cache_dir) == []
  config.update("persistent_cache_min_entry_size_bytes", 0)
  _compile_and_run(5.0)
  assert len(_entries(cache_dir)) == 1


def test_disabled_cache_is_not_consulted(cache_dir):
  config.update("enable_compilation_cache", False)
  counts = _compile_and_run(6.0)
  assert counts["backend_compile"] == 1 and counts["persistent_cache_miss"] == 0
  config.update("enable_compilation_cache", True)
  config.update("compilation_cache_dir", None)
  counts = _compile_and_run(6.0)
  assert counts["backend_compile"] == 1 and counts["persistent_cache_miss"] == 0
  assert not cache_dir.exists()


def test_max_size_evicts_least_recently_used(cache_dir):
  _compile_and_run(7.0)
  [a] = _entries(cache_dir)
  size = a.stat().st_size
  _compile_and_run(7.5)
  [b] = [p for p in _entries(cache_dir) if p != a]
  # Make the order of use explicit (file times can tie on a fast machine): b older than a.
  past = 10 ** 18  # 2001, in nanoseconds
  os.utime(b, ns=(past, past))
  os.utime(a, ns=(past + 10 ** 9, past + 10 ** 9))
  config.update("compilation_cache_max_size", int(2.5 * size))
  _compile_and_run(8.0)  # a third entry: the least recently used one (b) goes
  remaining = _entries(cache_dir)
  assert a in remaining and b not in remaining and len(remaining) == 2
  # A hit refreshes the entry's time, so after hitting a, the third entry is the oldest.
  [c] = [p for p in remaining if p != a]
  os.utime(c, ns=(past + 2 * 10 ** 9, past + 2 * 10 ** 9))
  os.utime(a, ns=(past, past))
  assert _compile_and_run(7.0)["persistent_cache_hit"] == 1
  assert a.stat().st_mtime_ns > c.stat().st_mtime_ns
  _compile_and_run(8.5)
  remaining = _entries(cache_dir)
  assert a in remaining and c not in remaining and len(remaining) == 2
  # An entry bigger than the whole cache is never written (it would evict everything).
  config.update("compilation_cache_max_size", size // 2)
  assert _compile_and_run(9.0)["persistent_cache_miss"] == 1
  assert len(_entries(cache_dir)) == 2


def test_programs_with_host_callbacks_are_not_cached():
  # Their executables hold pointers into this process.
  pattern = compilation_cache._CALLBACK_TARGET
  assert pattern.search('%0 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%arg0)')
  assert pattern.search('"stablehlo.custom_call"(%0) {call_target_name = "xla_python_cpu_'
                        'callback"}')
  assert not pattern.search(_module(1.0))
  assert not pattern.search('stablehlo.custom_call @lapack_sgetrf_ffi(%0)')


def test_key_depends_on_program_options_and_flags(monkeypatch):
  xc = client._xc()
  c = client.get_client()
  devices = c.local_devices()

  def options(ids):
    o = xc.CompileOptions()
    o.executable_build_options.num_replicas = len(ids)
    o.executable_build_options.num_partitions = 1
    o.executable_build_options.device_assignment = xc.DeviceAssignment.create(
        np.array([[i] for i in ids]))
    return o

  key = compilation_cache.cache_key(c, _module(1.0), devices[:1], options([0]))
  assert key == compilation_cache.cache_key(c, _module(1.0), devices[:1], options([0]))
  assert key != compilation_cache.cache_key(c, _module(2.0), devices[:1], options([0]))
  assert key != compilation_cache.cache_key(c, _module(1.0), devices[1:2], options([1]))
  assert key != compilation_cache.cache_key(c, _module(1.0), devices[:2], options([0, 1]))
  monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=true")
  assert key != compilation_cache.cache_key(c, _module(1.0), devices[:1], options([0]))


def test_jit_in_front_of_the_disk_cache(cache_dir):
  # A jitted call's second use is served from memory: the disk cache is asked once.
  f = hlox.jit(lambda v: v * 3.0625 + 1.1875)
  x = jnp.arange(5.0)
  with monitoring.count_events() as counts:
    f(x)
    f(x)
    hlox.jit(lambda v: v * 3.0625 + 1.1875)(x)  # same program, new wrapper
  assert counts["persistent_cache_miss"] + counts["persistent_cache_hit"] == 1
  np.testing.assert_allclose(np.asarray(f(x)), np.arange(5.0) * 3.0625 + 1.1875)
