"""Differential tests: the same programs in hlox and in JAX (the oracle, run in a separate
process so JAX never shares this process with hlox). Skipped when JAX is not installed."""
import importlib.util
import textwrap

import numpy as np
import pytest

import hlox
from tests.util import run_in_jax, selected_params
import hlox.numpy as hnp

pytestmark = [pytest.mark.jax_oracle,
              pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                                 reason="jax (the test oracle) is not installed")]

# Each program is the body of a function of (lib, np) returning an array; ``lib`` is a module
# with jit, grad, vmap, numpy (as jnp) and lax attributes.
PROGRAMS = {
    "promotion_weak": "jnp = lib.numpy; return jnp.arange(3) + 1.5",
    "promotion_bf16": "jnp = lib.numpy; return (jnp.ones(2, jnp.bfloat16) * 2.5).astype(jnp.float32)",
    "int_div": "jnp = lib.numpy; return jnp.array([-7, 7, -8]) // jnp.array([2, -2, 3])",
    "mod_neg": "jnp = lib.numpy; return jnp.mod(jnp.array([-7.5, 7.5]), 2.0)",
    "indexing_mixed": "jnp = lib.numpy; x = jnp.arange(60).reshape(3, 4, 5); "
                      "return x[1:, np.array([0, 2]), ::-2]",
    "indexing_bool": "jnp = lib.numpy; x = jnp.arange(6.0); return x[x > 2.5]",
    "at_add_dupes": "jnp = lib.numpy; return jnp.zeros(4).at[np.array([1, 1, 3])].add(2.0)",
    "reductions": "jnp = lib.numpy; x = jnp.arange(12.0).reshape(3, 4); "
                  "return jnp.stack([x.var(0), x.std(0, ddof=1), x.max(0), x.argmin(0) * 1.0])",
    "cumsum_sort": "jnp = lib.numpy; x = jnp.array([3.0, np.nan, 1.0, 2.0]); "
                   "return jnp.concatenate([jnp.sort(x), jnp.cumsum(jnp.arange(4.0))])",
    "matmul_broadcast": "jnp = lib.numpy; a = jnp.ones((2, 1, 3, 4)); b = jnp.arange(20.0).reshape(5, 4, 1); "
                        "return (a @ b).sum((0, 1))",
    "einsum": "jnp = lib.numpy; a = jnp.arange(6.0).reshape(2, 3); b = jnp.arange(12.0).reshape(3, 4); "
              "return jnp.einsum('ij,jk->ki', a, b)",
    "grad_tanh": "jnp = lib.numpy; return lib.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2))(jnp.linspace(-1, 1, 5))",
    "grad_max_ties": "jnp = lib.numpy; return lib.grad(lambda x: jnp.max(x))(jnp.array([1.0, 3.0, 3.0]))",
    "hessian": "jnp = lib.numpy; return lib.hessian(lambda x: jnp.sum(jnp.sin(x) * x[::-1]))(jnp.array([0.3, 0.5, 0.9]))",
    "vmap_grad": "jnp = lib.numpy; f = lambda w, x: jnp.sum(jnp.tanh(x @ w)); "
                 "return lib.vmap(lib.grad(f), in_axes=(None, 0))(jnp.ones((3, 2)), jnp.arange(15.0).reshape(5, 3) / 10)",
    "jit_static": "jnp = lib.numpy; f = lib.jit(lambda x, n: x ** n, static_argnums=1); return f(jnp.arange(4.0), 3)",
    "clip_where": "jnp = lib.numpy; x = jnp.linspace(-2, 2, 8); return jnp.where(x > 0, jnp.clip(x, 0.5, 1.5), -x)",
    "logsumexp_like": "jnp = lib.numpy; x = jnp.array([1000.0, 1000.0]); return jnp.logaddexp(x[0], x[1])",
    "split_stack": "jnp = lib.numpy; return jnp.stack(jnp.split(jnp.arange(6), 3), axis=1)",
    # pmap and collectives (JAX runs with 8 CPU devices, as the test configuration gives hlox)
    "pmap_normalize": "jnp, lax = lib.numpy, lib.lax; "
                      "return lib.pmap(lambda x: x / lax.psum(x, 'i'), axis_name='i')(jnp.arange(4.0))",
    "pmap_axes": "jnp = lib.numpy; return lib.pmap(lambda x, y: x * y.sum(), in_axes=(1, None), "
                 "out_axes=1)(jnp.arange(6.0).reshape(2, 3), jnp.arange(4.0))",
    "all_gather": "jnp, lax = lib.numpy, lib.lax; x = jnp.arange(24.0).reshape(4, 3, 2); "
                  "f = lambda v: jnp.concatenate([lax.all_gather(v, 'i', axis=1).ravel(), "
                  "lax.all_gather(v, 'i', axis=1, tiled=True).ravel()]); "
                  "return lib.pmap(f, axis_name='i')(x)",
    "all_to_all": "jnp, lax = lib.numpy, lib.lax; x = jnp.arange(64.0).reshape(4, 4, 2, 2); "
                  "return lib.pmap(lambda v: lax.all_to_all(v, 'i', 0, 2), axis_name='i')(x)",
    "all_to_all_tiled": "jnp, lax = lib.numpy, lib.lax; x = jnp.arange(96.0).reshape(4, 8, 3); "
                        "return lib.pmap(lambda v: lax.all_to_all(v, 'i', 0, 1, tiled=True), "
                        "axis_name='i')(x)",
    "all_to_all_vmap": "jnp, lax = lib.numpy, lib.lax; x = jnp.arange(64.0).reshape(4, 4, 2, 2); "
                       "return lib.vmap(lambda v: lax.all_to_all(v, 'i', 0, 2), axis_name='i')(x)",
    "psum_scatter": "jnp, lax = lib.numpy, lib.lax; x = jnp.arange(128.0).reshape(4, 4, 8); "
                    "f = lambda v: jnp.concatenate([lax.psum_scatter(v, 'i').ravel(), "
                    "lax.psum_scatter(v, 'i', scatter_dimension=1, tiled=True).ravel()]); "
                    "return lib.pmap(f, axis_name='i')(x)",
    "ppermute_ring": "jnp, lax = lib.numpy, lib.lax; perm = [(0, 1), (1, 2), (2, 0)]; "
                     "return lib.pmap(lambda v: lax.ppermute(v, 'i', perm), axis_name='i')("
                     "jnp.arange(8.0).reshape(4, 2))",
    "grad_pmap_pmean": "jnp, lax = lib.numpy, lib.lax; "
                       "g = lambda x: jnp.sum(lib.pmap(lambda v: jnp.sin(v) * lax.pmean(v * v, 'i'), "
                       "axis_name='i')(x)); return lib.grad(g)(jnp.linspace(0.1, 1.0, 8).reshape(4, 2))",
    "grad_all_gather": "jnp, lax = lib.numpy, lib.lax; "
                       "g = lambda x: jnp.sum(lib.pmap(lambda v: lax.all_gather(v, 'i') * "
                       "jnp.arange(4.0)[:, None], axis_name='i')(x) ** 2); "
                       "return lib.grad(g)(jnp.linspace(0.1, 1.0, 8).reshape(4, 2))",
    "pmap_out_axes_none": "jnp, lax = lib.numpy, lib.lax; "
                          "f = lib.pmap(lambda v: (lax.pmean(v * v, 'i'), v), axis_name='i', "
                          "out_axes=(None, 0)); x = jnp.linspace(0.5, 2.0, 4); "
                          "return jnp.concatenate([f(x)[0][None], "
                          "lib.grad(lambda x: f(x)[0] + f(x)[1].sum())(x)])",
    "vmap_of_pmap": "jnp, lax = lib.numpy, lib.lax; "
                    "return lib.vmap(lib.pmap(lambda v: v * lax.pmax(v, 'i'), axis_name='i'), "
                    "in_axes=1)(jnp.arange(12.0).reshape(4, 3))",
}

JAX_RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax, jax.numpy, jax.lax
    class Lib:
      pass
    lib = Lib()
    for name in ("jit", "grad", "vmap", "hessian", "pmap"):
      setattr(lib, name, getattr(jax, name))
    lib.numpy, lib.lax = jax.numpy, jax.lax
    programs = json.loads(sys.stdin.read())
    out = {}
    for name, body in programs.items():
      ns = {}
      exec("def prog(lib, np):\\n  " + body, ns)
      r = ns["prog"](lib, np)
      out[name] = {"value": np.asarray(r, dtype=np.float64).tolist(), "shape": list(np.shape(r)),
                   "dtype": str(r.dtype), "weak": bool(getattr(r, "weak_type", False))}
    print(json.dumps(out))
""")


class _HloxLib:
  jit, grad, vmap, hessian, pmap = hlox.jit, hlox.grad, hlox.vmap, hlox.hessian, hlox.pmap
  numpy, lax = hnp, hlox.lax


@pytest.fixture(scope="module")
def jax_results(request):
  names = selected_params(request, "name")
  return run_in_jax(JAX_RUNNER, {k: v for k, v in PROGRAMS.items() if k in names},
                    {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"})


@pytest.mark.ci_sample(3)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_matches_jax(name, jax_results):
  ns = {}
  exec("def prog(lib, np):\n  " + PROGRAMS[name], ns)
  result = ns["prog"](_HloxLib, np)
  expected = jax_results[name]
  assert list(np.shape(result)) == expected["shape"]
  assert str(result.dtype) == expected["dtype"]
  assert bool(result.weak_type) == expected["weak"], name
  np.testing.assert_allclose(np.asarray(result, dtype=np.float64),
                             np.asarray(expected["value"], dtype=np.float64),
                             rtol=2e-6, atol=1e-6, equal_nan=True)
