"""hlox.fastmath backend selection: Trax's ops_test re-expressed, plus configuration by the
environment and gin, thread-local nesting, error messages, and the NumPy backend running
without ever starting XLA."""
import collections
import os
import subprocess
import sys
import textwrap
import threading

import numpy as onp
import pytest

import hlox.fastmath as fastmath
from hlox import numpy as hnp
from hlox.fastmath import ops

ROOT = os.path.join(os.path.dirname(__file__), os.pardir)
_TestNamedtuple = collections.namedtuple("_TestNamedtuple", ["x"])


@pytest.fixture(autouse=True)
def _clean_backend():
  fastmath.set_backend(None)
  yield
  fastmath.set_backend(None)


def _run(code, env=None):
  """Runs ``code`` in a fresh interpreter with this tree first on the path."""
  full_env = dict(os.environ, PYTHONPATH=os.path.abspath(ROOT) + os.pathsep +
                  os.environ.get("PYTHONPATH", ""))
  full_env.pop("HLOX_FASTMATH_BACKEND", None)
  full_env.update(env or {})
  out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=120, env=full_env, cwd=os.path.abspath(ROOT))
  assert out.returncode == 0, out.stderr[-3000:]
  return out.stdout


# --- Trax's BackendTest ----------------------------------------------------------------------

def test_default_backend_is_hlox():
  backend = fastmath.backend()
  assert backend["np"] is hnp
  assert backend["np"] is not onp
  assert backend["name"] == "hlox"
  assert fastmath.backend_name() == "hlox"


def test_backend_can_be_set_and_cleared():
  assert fastmath.backend_name() == "hlox"
  fastmath.set_backend("numpy")
  assert fastmath.backend_name() == "numpy"
  assert fastmath.backend()["np"] is onp
  fastmath.set_backend(None)
  assert fastmath.backend_name() == "hlox"
  fastmath.set_backend(fastmath.Backend.NUMPY)
  assert fastmath.backend_name() == "numpy"


def test_numpy_proxy_delegation_follows_the_switch():
  np = fastmath.numpy
  assert np.isinf(np.inf)
  assert np.isinf is hnp.isinf
  assert np.inf == hnp.inf
  fastmath.set_backend("numpy")
  assert np.isinf(np.inf)
  assert np.isinf is onp.isinf
  assert isinstance(np.ones(3), onp.ndarray)
  with fastmath.use_backend("hlox"):
    assert np.isinf is hnp.isinf


def test_names_match_and_every_member_is_registered():
  for backend_enum, backend_obj in ops._backend_dict.items():
    assert backend_enum.value == backend_obj["name"]
  for backend_enum in fastmath.Backend:
    assert backend_enum in ops._backend_dict
  assert ops._backend_dict[fastmath.Backend.JAX] is ops._backend_dict[fastmath.Backend.HLOX]


def test_use_backend_with_strings_and_enums():
  with fastmath.use_backend("numpy"):
    assert fastmath.backend_name() == "numpy"
  with fastmath.use_backend(fastmath.Backend.NUMPY):
    assert fastmath.backend_name() == "numpy"
    assert fastmath.is_backend(fastmath.Backend.NUMPY)
  assert fastmath.backend_name() == "hlox"


def test_jax_is_an_alias_of_hlox():
  assert fastmath.Backend.JAX is fastmath.Backend.HLOX
  assert fastmath.Backend("jax") is fastmath.Backend.HLOX
  assert fastmath.Backend.HLOX.value == "hlox"
  assert [b.value for b in fastmath.Backend] == ["hlox", "numpy"]
  assert fastmath.is_backend(fastmath.Backend.JAX)
  fastmath.set_backend("numpy")
  with fastmath.use_backend("jax"):
    assert fastmath.backend_name() == "hlox"
    assert fastmath.is_backend(fastmath.Backend.JAX)
    assert fastmath.numpy.sin is hnp.sin


def test_use_backend_restores_on_exception_and_nests():
  fastmath.set_backend("numpy")
  with pytest.raises(ZeroDivisionError):
    with fastmath.use_backend("hlox"):
      assert fastmath.backend_name() == "hlox"
      1 / 0
  assert fastmath.backend_name() == "numpy"
  with fastmath.use_backend("hlox"):
    with fastmath.use_backend("numpy"):
      with fastmath.use_backend("jax"):
        assert fastmath.backend_name() == "hlox"
      assert fastmath.backend_name() == "numpy"
    assert fastmath.backend_name() == "hlox"
  assert fastmath.backend_name() == "numpy"


def test_use_backend_beats_set_backend():
  with fastmath.use_backend("numpy"):
    fastmath.set_backend("hlox")
    assert fastmath.backend_name() == "numpy"
  assert fastmath.backend_name() == "hlox"


def test_use_backend_is_thread_local():
  seen = {}
  inside, release = threading.Event(), threading.Event()

  def worker():
    inside.wait()
    seen["other"] = fastmath.backend_name()
    with fastmath.use_backend("numpy"):
      seen["other_inside"] = fastmath.backend_name()
      release.set()

  t = threading.Thread(target=worker)
  t.start()
  with fastmath.use_backend("numpy"):
    inside.set()
    release.wait(10)
    seen["main"] = fastmath.backend_name()
  t.join(10)
  assert seen == {"other": "hlox", "other_inside": "numpy", "main": "numpy"}
  assert fastmath.backend_name() == "hlox"


def test_fori_loop_on_every_backend():
  for b in fastmath.Backend:
    with fastmath.use_backend(b):
      assert int(fastmath.fori_loop(2, 5, lambda i, x: x + i, 1)) == 1 + 2 + 3 + 4


def test_fori_loop_falls_back_to_scan(monkeypatch):
  table = ops._load("numpy")
  monkeypatch.delitem(table, "fori_loop")
  calls = []
  real_scan = table["scan"]
  monkeypatch.setitem(table, "scan", lambda *a, **k: calls.append(1) or real_scan(*a, **k))
  with fastmath.use_backend("numpy"):
    assert fastmath.fori_loop(2, 5, lambda i, x: x + i, 1) == 10
  assert calls == [1]


def test_nested_map_and_stack():
  inp = {"a": ([0, 1], 2), "b": _TestNamedtuple(3)}
  out = {"a": ([1, 2], 3), "b": _TestNamedtuple(4)}
  assert fastmath.nested_map(lambda x: x + 1, inp) == out
  assert isinstance(fastmath.nested_map(lambda x: x + 1, inp)["b"], _TestNamedtuple)
  inp = [{"a": ([0, 1], 2), "b": _TestNamedtuple(3)},
         {"a": ([1, 2], 3), "b": _TestNamedtuple(4)}]
  out = {"a": ([[0, 1], [1, 2]], [2, 3]), "b": _TestNamedtuple([3, 4])}
  onp.testing.assert_equal(fastmath.nested_stack(inp), out)


# --- configuration ---------------------------------------------------------------------------

def test_environment_variable_selects_the_backend():
  out = _run("""
    import hlox.fastmath as fastmath, numpy
    print(fastmath.backend_name(), fastmath.numpy.sin is numpy.sin)
    fastmath.set_backend('hlox'); print(fastmath.backend_name())
    with fastmath.use_backend('hlox'): print(fastmath.backend_name())
    fastmath.set_backend(None); print(fastmath.backend_name())
  """, env={"HLOX_FASTMATH_BACKEND": "numpy"})
  assert out.split() == ["numpy", "True", "hlox", "hlox", "numpy"]


def test_environment_variable_with_an_unknown_name_fails_clearly():
  env = dict(os.environ, PYTHONPATH=os.path.abspath(ROOT), HLOX_FASTMATH_BACKEND="torch")
  out = subprocess.run([sys.executable, "-c", "import hlox.fastmath"], capture_output=True,
                       text=True, timeout=120, env=env)
  assert out.returncode != 0
  assert "HLOX_FASTMATH_BACKEND" in out.stderr and "'torch'" in out.stderr
  assert "'numpy'" in out.stderr


def test_gin_binding_selects_the_backend():
  gin = pytest.importorskip("gin", reason="gin-config is not installed")
  gin.clear_config()
  try:
    assert fastmath.backend()["np"] is hnp
    gin.parse_config_files_and_bindings(None, "backend.name = 'numpy'")
    assert fastmath.backend()["np"] is onp
    assert fastmath.backend_name() == "numpy"
    assert fastmath.numpy.isinf is onp.isinf
    with fastmath.use_backend("hlox"):
      assert fastmath.backend()["np"] is hnp
    fastmath.set_backend("hlox")
    assert fastmath.backend_name() == "hlox"
    fastmath.set_backend(None)
    gin.clear_config()
    gin.parse_config_files_and_bindings(None, "hlox.fastmath.backend.name = 'jax'")
    assert fastmath.backend_name() == "hlox"
  finally:
    gin.clear_config()
  assert fastmath.backend_name() == "hlox"


# --- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["tensorflow-numpy", "torch", ""])
def test_unknown_backend_names_list_the_valid_ones(name):
  for api in (fastmath.set_backend, fastmath.use_backend, fastmath.is_backend):
    with pytest.raises(ValueError, match=r"no backend named .*'hlox'.*'jax'.*'numpy'"):
      if api is fastmath.use_backend:
        with api(name):
          pass
      else:
        api(name)
  assert fastmath.backend_name() == "hlox"


@pytest.mark.parametrize("bad", [3, None, ["numpy"], onp])
def test_use_backend_rejects_non_names(bad):
  with pytest.raises(TypeError, match="use_backend: expected a backend name"):
    with fastmath.use_backend(bad):
      pass
  assert fastmath.backend_name() == "hlox"


def test_get_prng_needs_a_scalar_seed():
  for b in fastmath.Backend:
    with fastmath.use_backend(b):
      with pytest.raises(TypeError, match="get_prng.*scalar"):
        fastmath.random.get_prng(onp.array([1, 2]))
      with pytest.raises(TypeError, match="get_prng.*integer"):
        fastmath.random.get_prng(1.5)


@pytest.mark.parametrize("lower,upper", [(0.0, 3), (0, 2.5), (True, 3), (onp.zeros(2, int), 3)])
def test_fori_loop_needs_integer_bounds(lower, upper):
  for b in fastmath.Backend:
    with fastmath.use_backend(b):
      with pytest.raises(TypeError, match="fori_loop: (lower|upper) must be a scalar integer"):
        fastmath.fori_loop(lower, upper, lambda i, x: x, 0)


def test_conv_rejects_input_dilation():
  x, w = onp.ones((1, 4, 4, 1), onp.float32), onp.ones((2, 2, 1, 1), onp.float32)
  for b in fastmath.Backend:
    with fastmath.use_backend(b):
      with pytest.raises(ValueError, match="fastmath.conv does not support input dilation"):
        fastmath.conv(x, w, (1, 1), "VALID", ("NHWC", "HWIO", "NHWC"), lhs_dilation=(2, 2))
      with pytest.raises(TypeError, match="fastmath.conv got unexpected keyword"):
        fastmath.conv(x, w, (1, 1), "VALID", ("NHWC", "HWIO", "NHWC"), groups=2)


def test_custom_vjp_nondiff_argnums_must_be_a_prefix_on_the_fallback_backend():
  f = lambda a, b, c: a * b * c
  with fastmath.use_backend("numpy"):
    with pytest.raises(ValueError, match=r"custom_vjp: on the 'numpy' backend nondiff_argnums "
                                         r"must be a prefix.*\(1,\)"):
      fastmath.custom_vjp(f, lambda *a: (f(*a), a), lambda r, g: r, nondiff_argnums=(1,))
    fastmath.custom_vjp(f, lambda *a: (f(*a), a), lambda r, g: r, nondiff_argnums=(0, 1))


@pytest.mark.parametrize("op,make", [
    ("grad", lambda: fastmath.grad(lambda x: x * x)),
    ("value_and_grad", lambda: fastmath.value_and_grad(lambda x: x * x)),
    ("vmap", lambda: fastmath.vmap(lambda x: x * x)),
    ("pmap", lambda: fastmath.pmap(lambda x: x * x, axis_name="batch")),
    ("custom_grad", lambda: fastmath.custom_grad(lambda x: (x, lambda g: (g,)), lambda x: x)),
    ("custom_grad", lambda: fastmath.custom_vjp(lambda x: x, lambda x: (x, ()),
                                                lambda r, g: (g,))),
])
def test_tracing_transforms_raise_when_called_not_when_wrapped(op, make):
  with fastmath.use_backend("numpy"):
    wrapped = make()  # library code wraps at import time: this must not raise
    with pytest.raises(NotImplementedError) as info:
      wrapped(3.0)
  msg = str(info.value)
  assert f"fastmath.{op}" in msg and "NumPy backend" in msg and "use_backend('hlox')" in msg


def test_direct_tracing_operations_raise_on_numpy():
  with fastmath.use_backend("numpy"):
    with pytest.raises(NotImplementedError, match=r"fastmath.vjp .*use_backend\('hlox'\)"):
      fastmath.vjp(lambda x: x, 1.0)
    with pytest.raises(NotImplementedError, match=r"fastmath.psum .*use_backend\('hlox'\)"):
      fastmath.psum(1.0, "batch")
    # Trax's layers/base.py: a pmapped function defined while the NumPy backend is active.
    import functools
    axis_index = functools.partial(fastmath.pmap, axis_name="batch")(lambda x: x)
    with pytest.raises(NotImplementedError, match="fastmath.pmap"):
      axis_index(onp.zeros(1))


def test_disable_jit_statement_and_context_manager():
  def f(x):
    return x + 1
  assert fastmath.jit(f) is not f
  with fastmath.disable_jit():
    assert fastmath.jit(f) is f
    assert fastmath.jit(f, static_argnums=0) is f
  assert fastmath.jit(f) is not f
  try:
    fastmath.disable_jit()
    assert fastmath.jit(f) is f
  finally:
    ops._JitSwitch.jit_disabled = False
  with fastmath.use_backend("numpy"):
    assert fastmath.jit(f) is f  # the NumPy backend's jit is the identity


# --- the NumPy backend imports nothing of XLA ------------------------------------------------

def test_numpy_backend_never_starts_xla():
  out = _run("""
    import sys
    import hlox.fastmath as fastmath
    from hlox.fastmath import numpy as np
    from hlox.runtime import client
    fastmath.set_backend('numpy')
    x = np.arange(32, dtype=np.float32).reshape(1, 4, 4, 2)
    w = np.ones((2, 2, 2, 3), np.float32)
    y = fastmath.conv(x, w, (1, 1), 'SAME', ('NHWC', 'HWIO', 'NHWC'))
    p = fastmath.avg_pool(y, (2, 2), (2, 2), 'SAME')
    k1, k2 = fastmath.random.split(fastmath.random.get_prng(0))
    z = fastmath.random.normal(k1, (3,)) + fastmath.random.uniform(k2, (3,))
    s = fastmath.fori_loop(0, 3, lambda i, v: v + i, 0)
    l = fastmath.logsumexp(p, axis=(1, 2))
    g = fastmath.grad(lambda v: v)  # wrapping works; calling would raise
    print(p.shape, z.shape, s, l.shape, type(p).__module__)
    print('client:', client.client_created(),
          'hlox backend:', 'hlox.fastmath.hlox_backend' in sys.modules)
  """)
  assert "(1, 2, 2, 3) (3,) 3 (1, 3) numpy" in out
  # No PJRT client was started and the hlox backend was never loaded: nothing compiled.
  assert "client: False hlox backend: False" in out


def test_import_rules_of_the_package():
  """fastmath imports no jaxlib and no hlox.runtime; the NumPy-side modules import nothing
  of XLA (nor the hlox backend); no import hides inside a function."""
  import ast
  import glob
  xla_free = {"nested.py", "prng_numpy.py", "numpy_backend.py", "ops.py", "__init__.py"}
  for path in glob.glob(os.path.join(ROOT, "hlox", "fastmath", "*.py")):
    tree = ast.parse(open(path).read())
    names = []
    for node in ast.walk(tree):
      if isinstance(node, ast.Import):
        names += [a.name for a in node.names]
      elif isinstance(node, ast.ImportFrom):
        names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    assert not [n for n in names if n.split(".")[0] in ("jax", "jaxlib")], path
    assert not [n for n in names if n.startswith("hlox.runtime")], path
    if os.path.basename(path) in xla_free:
      bad = [n for n in names if n.startswith("hlox") and not n.startswith(
          ("hlox.fastmath", "hlox.config"))]
      assert not bad, (path, bad)
    for fn in ast.walk(tree):
      if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        local = [n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert not local, (path, fn.name)
