"""Differential tests for transformations (grad/jacobians/vjp/jvp, control flow, custom
derivatives, checkpoint, printed jaxprs) and ``hlox.nn``: the same programs run in hlox and in
JAX (the oracle, in a separate process so JAX never shares this process with hlox). Skipped
when JAX is not installed."""
import importlib.util
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.util import once_per_test_run, selected_params

pytestmark = [pytest.mark.jax_oracle,
              pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                                 reason="jax (the test oracle) is not installed")]

# Each program is a block of statements run with ``jax`` (the library: hlox or JAX), ``jnp``,
# ``lax``, ``tu`` (tree_util) and ``np`` bound; it sets ``out`` to a pytree (arrays, scalars, strings). Both
# libraries must agree on the tree structure, every leaf's shape, dtype, weak type and value,
# or raise the same exception type.
PROGRAMS = {
    'as_add': 'out = lax.associative_scan(jnp.add, jnp.arange(7.))',
    'as_add8': 'out = lax.associative_scan(jnp.add, jnp.arange(8))',
    'as_axis': 'out = lax.associative_scan(jnp.multiply, jnp.arange(1., 13.).reshape(3, 4), axis=1)',
    'as_axis_neg': 'out = lax.associative_scan(jnp.maximum, jnp.array([[3., 1.], [0., 5.], [4., 2.]]), axis=-2)',
    'as_bool': 'out = lax.associative_scan(jnp.logical_or, jnp.array([False, True, False, False, True]))',
    'as_empty': 'out = lax.associative_scan(jnp.add, jnp.ones(0))',
    'as_grad': 'out = jax.grad(lambda x: lax.associative_scan(jnp.multiply, x).sum())(jnp.arange(1., 6.))',
    'as_jit': 'out = jax.jit(lambda x: lax.associative_scan(jnp.add, x, reverse=True))(jnp.arange(6))',
    'as_mismatch': 'out = lax.associative_scan(lambda a, b: (a[0] + b[0], a[1] + b[1]), (jnp.ones(3), jnp.ones(4)))',
    'as_one': 'out = lax.associative_scan(jnp.add, jnp.ones(1))',
    'as_rev': 'out = lax.associative_scan(jnp.add, jnp.arange(7.), reverse=True)',
    'as_tree': 'out = lax.associative_scan(lambda a, b: (a[0] * b[0], a[1] * b[0] + b[1]), (jnp.full(5, 0.5, jnp.float32), jnp.arange(5.)))',
    'as_vmap': 'out = jax.vmap(lambda x: lax.associative_scan(jnp.add, x))(jnp.arange(12.).reshape(3, 4))',
    'cj_grad': '\n@jax.custom_jvp\ndef f(x, y):\n  return jnp.sin(x) * y\n@f.defjvp\ndef f_jvp(primals, tangents):\n  x, y = primals\n  tx, ty = tangents\n  return f(x, y), jnp.cos(x) * y * tx + jnp.sin(x) * ty\nout = jax.grad(f, argnums=(0,1))(1.0, 2.0)',
    'cj_nondiff': '\nfrom functools import partial\n@partial(jax.custom_jvp, nondiff_argnums=(0,))\ndef app(f, x):\n  return f(x)\n@app.defjvp\ndef app_jvp(f, primals, tangents):\n  x, = primals; t, = tangents\n  return app(f, x), 3.0 * t\nout = jax.grad(lambda x: app(jnp.sin, x))(1.0)\n',
    'cj_wrong_tangent_dtype': 'f = jax.custom_jvp(lambda x: x*2)\nf.defjvp(lambda p, t: (f(p[0]), (t[0]*2).astype(jnp.float16)))\nout = jax.grad(f)(1.0)',
    'ckpt_grad': 'out = jax.grad(jax.checkpoint(lambda x: jnp.sin(jnp.sin(x))))(0.5)',
    'ckpt_policy': 'out = jax.grad(jax.checkpoint(lambda x: jnp.sin(x @ x).sum(), policy=jax.checkpoint_policies.dots_saveable))(jnp.ones((2,2)))',
    'ckpt_policy_names': "out = [n for n in ['everything_saveable', 'nothing_saveable', 'dots_saveable', 'checkpoint_dots', 'dots_with_no_batch_dims_saveable', 'checkpoint_dots_with_no_batch_dims', 'save_from_both_policies'] if hasattr(jax.checkpoint_policies, n)]",
    'cond_grad': 'out = jax.grad(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))(1.0)',
    'cond_pred_float': 'out = lax.cond(1.0, lambda: 1.0, lambda: 2.0)',
    'cond_tree_mismatch': 'out = lax.cond(True, lambda: (1.0, 2.0), lambda: 1.0)',
    'cond_weak_mix2': 'out = lax.cond(True, lambda x: x, lambda x: 2.0, jnp.float32(1.0))',
    'cond_weak_vmap_pred': 'out = jax.vmap(lambda p, x: lax.cond(p, lambda x: x, lambda x: 2.0, x))(jnp.array([True, False]), jnp.ones(2))',
    'custom_jvp_vmap_in_axes': 'f = jax.custom_jvp(lambda x, y: x * y)\nf.defjvp(lambda p, t: (f(*p), t[0]*p[1] + t[1]*p[0]))\nout = jax.vmap(jax.grad(f, (0, 1)), in_axes=(0, None))(jnp.arange(3.), 2.0)',
    'custom_vjp_jvp_of': 'g = jax.custom_vjp(lambda x: x**2)\ng.defvjp(lambda x: (x**2, x), lambda x, ct: (ct*2*x,))\nout = jax.jacfwd(g)(3.0)',
    'cv_bwd_none': 'g = jax.custom_vjp(lambda x, y: x*y)\ng.defvjp(lambda x, y: (x*y, y), lambda r, ct: (ct*r, None))\nout = jax.grad(g, (0,1))(1.0, 2.0)',
    'cv_nondiff': '\nfrom functools import partial\n@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef h(x, n):\n  return x ** n\ndef h_fwd(x, n):\n  return h(x, n), x\ndef h_bwd(n, x, ct):\n  return (ct * n * x ** (n - 1) * 2,)\nh.defvjp(h_fwd, h_bwd)\nout = jax.grad(h)(2.0, 3)\n',
    'cv_vmap_grad': '\n@jax.custom_vjp\ndef g(x, y):\n  return x * y\ndef g_fwd(x, y):\n  return g(x, y), (x, y)\ndef g_bwd(res, ct):\n  x, y = res\n  return (ct * y * 10, ct * x)\ng.defvjp(g_fwd, g_bwd)\nout = jax.vmap(jax.grad(g))(jnp.arange(3.), jnp.ones(3))',
    'donate_oob': 'out = jax.jit(lambda x: x, donate_argnums=3)(1.0)',
    'fori_body_changes_type': 'out = lax.fori_loop(0, 3, lambda i, c: c + 0.5, 0)',
    'fori_float_bound': 'out = lax.fori_loop(0, 5.0, lambda i, c: c + i, 0)',
    'fori_i16': 'out = lax.fori_loop(np.int16(0), np.int16(5), lambda i, c: c + i, 0)',
    'fori_mismatch': 'out = jax.jit(lambda a, b: lax.fori_loop(a, b, lambda i, c: c + i, 0))(np.int16(0), np.int32(5))',
    'fori_np_lower': 'out = lax.fori_loop(np.int32(0), 5, lambda i, c: c + i, 0)',
    'fori_tracer_bounds': 'out = jax.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c + i, 0))(5)',
    'fori_weak_mix': 'out = jax.jit(lambda b: lax.fori_loop(0, b, lambda i, c: c + i, 0))(np.int16(5))',
    'grad_argnums': 'f=lambda x,y,z: jnp.sum(x*y*z)\nout = jax.grad(f, argnums=(0,2))(1.0, 2.0, 3.0)',
    'grad_argnums_oob': 'out = jax.grad(lambda x, y: x*y, argnums=2)(1.0, 2.0)',
    'grad_holo': 'out = jax.grad(lambda z: z**2, holomorphic=True)(1.0+2.0j)',
    'grad_kwarg_only': 'out = jax.grad(lambda x, y: x*y)(x=1.0, y=2.0)',
    'grad_weak': 'out = jax.grad(lambda x: x*2.0)(3.0)',
    'grad_zero_weak': 'out = jax.grad(lambda x, y: x*2.0, argnums=1)(1.0, 2.0)',
    'hess_argnums': 'out = jax.hessian(lambda x, y: (x**2*y).sum(), argnums=(0,1))(jnp.ones(2), 2.0)',
    'hess_weak': 'out = jax.hessian(lambda x: x**3)(2.0)',
    'hessian_aux': 'out = jax.hessian(lambda x: ((x**3).sum(), x.sum()), has_aux=True)(jnp.arange(2.))',
    'hessian_scan': 'out = jax.hessian(lambda x: lax.scan(lambda c, a: (c*jnp.sin(a), c), 1.0, x)[0])(jnp.arange(1., 3.))',
    'init_1d': 'k = jax.random.PRNGKey(42)\nout = jax.nn.initializers.lecun_normal()(k, (3,))',
    'init_complex': 'k = jax.random.PRNGKey(42)\nout = jax.nn.initializers.glorot_uniform()(k, (3, 4), jnp.complex64)',
    'init_conv': 'k = jax.random.PRNGKey(42)\nout = jax.nn.initializers.he_normal()(k, (3, 3, 2, 4))',
    'init_geo': "k = jax.random.PRNGKey(42)\nout = jax.nn.initializers.variance_scaling(0.5, 'fan_geo_avg', 'uniform')(k, (5, 4), jnp.float16)",
    'init_glorot_uniform': 'k = jax.random.PRNGKey(42)\nout = jax.nn.initializers.glorot_uniform()(k, (3, 4))',
    'init_he_normal': 'k = jax.random.PRNGKey(42)\nout = jax.nn.initializers.he_normal()(k, (3, 4))',
    'init_orth': 'k = jax.random.PRNGKey(42)\nout = jax.nn.initializers.orthogonal()(k, (3, 4))',
    'init_tn': 'k = jax.random.PRNGKey(42)\nout = jax.nn.initializers.truncated_normal(0.5)(k, (2, 3))',
    'jacfwd_cond': 'out = jax.jacfwd(lambda x: lax.cond(x[0] > 0, lambda x: x*2, lambda x: x, x))(jnp.arange(1., 3.))',
    'jacfwd_scalar': 'out = jax.jacfwd(jnp.sin)(1.0)',
    'jacrev_aux': 'out = jax.jacrev(lambda x: (x*2, x.sum()), has_aux=True)(jnp.arange(2.))',
    'jf_argnums_oob': 'out = jax.jacfwd(lambda x, y: x*y, argnums=2)(jnp.arange(2.), jnp.ones(2))',
    'jf_aux': "out = jax.jacfwd(lambda x: (x*2, {'s': x.sum()}), has_aux=True)(jnp.arange(2.))",
    'jf_complex_in': 'out = jax.jacfwd(lambda x: x*2)(jnp.ones(2, jnp.complex64))',
    'jf_holo': 'out = jax.jacfwd(lambda z: z**2, holomorphic=True)(jnp.array([1+1j, 2.0]))',
    'jf_int_out': 'out = jax.jacfwd(lambda x: jnp.round(x).astype(jnp.int32))(jnp.ones(2))',
    'jf_mixed_dtype': 'out = jax.jacfwd(lambda x, y: (x*y).astype(jnp.float16), argnums=(0,1))(jnp.ones(2), jnp.ones(2, jnp.float16))',
    'jf_scalar': 'out = jax.jacfwd(jnp.sin)(1.0)',
    'jit_eval_shape': 'f = jax.jit(lambda x: x * 2)\nr = f.eval_shape(jnp.ones(3))\nout = (r.shape, str(r.dtype))',
    'jit_inline': 'out = str(jax.make_jaxpr(lambda x: jax.jit(lambda y: y * 2, inline=True)(x))(1.0))',
    'jit_trace_jaxpr': 'f = jax.jit(lambda x: x * 2)\nout = str(f.trace(jnp.ones(3)).jaxpr)',
    'jr_aux': "out = jax.jacrev(lambda x: (x*2, {'s': x.sum()}), has_aux=True)(jnp.arange(2.))",
    'jr_complex_out': 'out = jax.jacrev(lambda x: x*(1+1j))(jnp.ones(2))',
    'jr_holo': 'out = jax.jacrev(lambda z: z**2, holomorphic=True)(jnp.array([1+1j, 2.0]))',
    'jr_int_allow': 'out = jax.jacrev(lambda x: x*2.0, allow_int=True)(jnp.arange(3))',
    'jr_int_out': 'out = jax.jacrev(lambda x: jnp.round(x).astype(jnp.int32))(jnp.ones(2))',
    'jr_mixed_dtype': 'out = jax.jacrev(lambda x, y: (x*y).astype(jnp.float16), argnums=(0,1))(jnp.ones(2), jnp.ones(2, jnp.float16))',
    'jr_scalar': 'out = jax.jacrev(jnp.sin)(1.0)',
    'jr_tuple_out': "out = jax.jacrev(lambda x: (x, x.sum(), {'a': x[0]}))(jnp.ones(2))",
    'jvp_const': 'out = jax.jvp(lambda x: 3.0, (2.0,), (1.0,))',
    'jvp_has_aux': 'out = jax.jvp(lambda x: (x*2, x+1), (1.0,), (1.0,), has_aux=True)',
    'lin_wrong': 'y, f = jax.linearize(lambda x, y: x*y, 2.0, 3.0)\nout = f(1.0)',
    'linearize_aux': 'y, f, aux = jax.linearize(lambda x: (jnp.sin(x), x*3), 2.0, has_aux=True)\nout = (y, f(1.0), aux)',
    'lower_compile_call': 'f = jax.jit(lambda x: x * 2)\nout = f.lower(jnp.ones(3)).compile()(jnp.arange(3.))',
    'make_jaxpr_axis_env': "out = str(jax.make_jaxpr(lambda x: lax.psum(x, 'i'), axis_env=[('i', 4)])(1.0))",
    'mk_cond': 'out = str(jax.make_jaxpr(lambda x: lax.cond(x > 0, lambda x: x*2, lambda x: x+1, x))(1.0))',
    'mk_cond_consts': 'c = jnp.arange(3.)\nout = str(jax.make_jaxpr(lambda p, x: lax.cond(p, lambda x: x + c, lambda x: x - c, x))(True, jnp.ones(3)))',
    'mk_custom_jvp': 'f = jax.custom_jvp(lambda x: jnp.sin(x))\nf.defjvp(lambda p, t: (f(p[0]), jnp.cos(p[0])*t[0]))\nout = str(jax.make_jaxpr(f)(1.0))',
    'mk_custom_vjp': 'f = jax.custom_vjp(lambda x: jnp.sin(x))\nf.defvjp(lambda x: (jnp.sin(x), x), lambda r, g: (g*jnp.cos(r),))\nout = str(jax.make_jaxpr(f)(1.0))',
    'mk_fori': 'out = str(jax.make_jaxpr(lambda x: lax.fori_loop(0, 3, lambda i, c: c*2, x))(1.0))',
    'mk_fori_traced': 'out = str(jax.make_jaxpr(lambda n: lax.fori_loop(0, n, lambda i, c: c + i, 0))(3))',
    'mk_grad': 'out = str(jax.make_jaxpr(jax.grad(lambda x: jnp.sin(x)*x))(1.0))',
    'mk_grad_sq': 'out = str(jax.make_jaxpr(jax.grad(lambda x: (x ** 2).sum()))(jnp.ones(3)))',
    'mk_jit': 'out = str(jax.make_jaxpr(lambda x: jax.jit(lambda y: y*2)(x) + 1)(1.0))',
    'mk_nested_jit': 'f = jax.jit(lambda y: y + 1)\ng = jax.jit(lambda z: f(z) * 2)\nout = str(jax.make_jaxpr(g)(1.0))',
    'mk_no_eqns': 'out = str(jax.make_jaxpr(lambda x: x)(1.0))',
    'mk_pjit_named': 'def foo(x): return x * 2\nout = str(jax.make_jaxpr(lambda x: jax.jit(foo)(x))(1.0))',
    'mk_remat': 'out = str(jax.make_jaxpr(jax.checkpoint(lambda x: jnp.sin(jnp.sin(x))))(1.0))',
    'mk_scan': 'out = str(jax.make_jaxpr(lambda x: lax.scan(lambda c, a: (c+a, c*a), 0.0, x))(jnp.ones(3)))',
    'mk_simple': 'out = str(jax.make_jaxpr(lambda x, y: jnp.sin(x) * y + 2.0)(1.0, jnp.ones(3)))',
    'mk_switch': 'out = str(jax.make_jaxpr(lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda v: v], x))(1, 1.0))',
    'mk_vag': 'out = str(jax.make_jaxpr(jax.value_and_grad(lambda x, y: x * y))(1.0, 2.0))',
    'mk_while2': 'out = str(jax.make_jaxpr(lambda x: lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * x), (0, 1.0)))(2.0))',
    'nn_gelu': 'x = jnp.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 7.0])\nout = jax.nn.gelu(x)',
    'nn_gelu_exact_grad': 'x = jnp.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 7.0])\nout = jax.vmap(jax.grad(lambda v: jax.nn.gelu(v, approximate=False)))(x)',
    'nn_gelu_int': 'out = jax.nn.gelu(jnp.array([-2, 0, 3]))',
    'nn_glu_axis0': 'out = jax.nn.glu(jnp.arange(8.).reshape(2,4), axis=0)',
    'nn_grad_elu': 'x = jnp.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 7.0])\nout = jax.vmap(jax.grad(jax.nn.elu))(x)',
    'nn_grad_hard_tanh': 'x = jnp.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 7.0])\nout = jax.vmap(jax.grad(jax.nn.hard_tanh))(x)',
    'nn_grad_relu': 'x = jnp.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 7.0])\nout = jax.vmap(jax.grad(jax.nn.relu))(x)',
    'nn_grad_relu6': 'x = jnp.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 7.0])\nout = jax.vmap(jax.grad(jax.nn.relu6))(x)',
    'nn_log1mexp_grad': 'out = jax.vmap(jax.grad(jax.nn.log1mexp))(jnp.array([0.1, 0.5, 1.0, 3.0]))',
    'nn_log_softmax_where': 'out = jax.nn.log_softmax(jnp.arange(4.), where=jnp.array([True, False, True, True]))',
    'nn_logmeanexp_where': 'out = jax.nn.logmeanexp(jnp.arange(4.), where=jnp.array([True, False, True, True]))',
    'nn_logsumexp_b': 'out = jax.nn.logsumexp(jnp.arange(4.), b=jnp.array([1., -1., 2., 0.5]), return_sign=True)',
    'nn_one_hot': 'out = jax.nn.one_hot(jnp.array([0, 2, -1, 3]), 3)',
    'nn_one_hot_axis0': 'out = jax.nn.one_hot(jnp.array([[0, 2], [1, 1]]), 3, axis=0)',
    'nn_one_hot_dtype': 'out = jax.nn.one_hot(jnp.array([0, 2]), 3, dtype=jnp.int32)',
    'nn_relu': 'x = jnp.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 7.0])\nout = jax.nn.relu(x)',
    'nn_relu_int': 'out = jax.nn.relu(jnp.array([-2, 0, 3]))',
    'nn_scalar_silu': 'out = jax.nn.silu(0.5)',
    'nn_selu': 'x = jnp.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 7.0])\nout = jax.nn.selu(x)',
    'nn_softmax_axes': 'out = jax.nn.softmax(jnp.arange(12.).reshape(3,4), axis=(0,1))',
    'nn_softmax_grad': 'out = jax.grad(lambda x: jax.nn.softmax(x)[1])(jnp.arange(3.))',
    'nn_softmax_where': 'out = jax.nn.softmax(jnp.arange(4.), where=jnp.array([True, False, True, True]))',
    'nn_standardize': 'out = jax.nn.standardize(jnp.arange(12.).reshape(3,4))',
    'nn_standardize_stable': "out = jax.nn.standardize(jnp.arange(12.).reshape(3,4), axis=0, algorithm='stable')",
    'partial_jit': 'f = tu.Partial(lambda a, x: a * x, jnp.float32(2.0))\nout = jax.jit(lambda f, x: f(x))(f, 3.0)',
    'random_grad': 'out = jax.grad(lambda m: (jax.random.normal(jax.random.PRNGKey(0), (3,)) * m).sum())(2.0)',
    'random_vmap_split': 'out = jax.vmap(lambda k: jax.random.split(k))(jax.random.split(jax.random.PRNGKey(0), 3))',
    'reg_dataclass': "\nimport dataclasses\n@dataclasses.dataclass\nclass D:\n  a: object\n  b: object\n  n: int\ntu.register_dataclass(D, data_fields=['a', 'b'], meta_fields=['n'])\nr = jax.vmap(lambda d: D(d.a * d.n, d.b, d.n))(D(jnp.arange(3.), jnp.ones(3), 2))\nout = (r.a, r.b, r.n)\n",
    'scan_len0': 'out = lax.scan(lambda c, x: (c+x, c*x), 1.0, jnp.zeros(0))',
    'scan_weak_promote': 'out = lax.scan(lambda c, x: (c + x, x), 0, jnp.arange(3.))',
    'static_argnames_bad': "out = jax.jit(lambda x: x, static_argnames='y')(1.0)",
    'static_argnums_oob': 'out = jax.jit(lambda x: x, static_argnums=3)(1.0)',
    'static_neg': 'out = jax.jit(lambda x, n: x * n, static_argnums=-1)(1.0, 3)',
    'static_unhashable': 'out = jax.jit(lambda x, l: x * len(l), static_argnums=1)(1.0, [1, 2])',
    'static_varargs': 'out = jax.jit(lambda *a: a[0] * a[3], static_argnums=3)(1.0, 2.0, 3.0, 4)',
    'switch_weak': 'out = lax.switch(0, [lambda: 1.0, lambda: jnp.float32(2.0)])',
    'switch_weak2': 'out = lax.switch(0, [lambda: jnp.float32(2.0), lambda: 1.0])',
    'tfp': "l, t = tu.tree_flatten_with_path({'a': [1, (2, 3)], 'b': 4})\nout = [tu.keystr(p) for p, _ in l]",
    'tm_isleaf': "out = tu.tree_map(lambda x: x*2 if not isinstance(x, tuple) else sum(x), {'a': (1, 2), 'b': 3}, is_leaf=lambda x: isinstance(x, tuple))",
    'tm_mismatch': "out = tu.tree_map(lambda x, y: x+y, {'a': 1, 'b': 2}, {'a': 10, 'c': 20})",
    'tracer_bool': 'out = jax.jit(lambda x: 1.0 if x > 0 else 2.0)(1.0)',
    'tracer_int': 'out = jax.jit(lambda x: int(x))(1.0)',
    'treduce_empty': 'out = tu.tree_reduce(lambda a, b: a + b, [])',
    'tree_broadcast': "out = jax.tree.broadcast([1, {'a': 2}], [(3, 4), {'a': [5, 6]}])",
    'tree_reduce_assoc': 'out = jax.tree.reduce_associative(lambda a, b: a - b, [1, 2, 3, 4, 5])',
    'ttranspose': 'out = tu.tree_transpose(tu.tree_structure([0, 0]), tu.tree_structure((0, 0)), [(1, 2), (3, 4)])',
    'tu_flatten_one_level': "c, a = tu.flatten_one_level({'b': [1, 2], 'a': 3})\nout = (list(c)[0], str(a))",
    'tu_flatten_one_level_keys': 'c, a = tu.flatten_one_level_with_keys([4, 5])\nout = [str(k) for k, _ in c]',
    'tu_flatten_one_level_leaf': 'out = tu.flatten_one_level(1.0)',
    'tu_is_tree_node': 'out = [tu.is_tree_node(t) for t in (list, tuple, dict, int, type(None), jnp.ndarray)]',
    'tu_reduce_assoc': "out = tu.tree_reduce_associative(lambda a, b: a * 10 + b, [1, (2, 3), {'x': 4}])",
    'tu_reduce_assoc_empty': 'out = tu.tree_reduce_associative(lambda a, b: a + b, [], identity=7)',
    'tu_reduce_assoc_empty_err': 'out = tu.tree_reduce_associative(lambda a, b: a + b, [])',
    'vag_aux': "f=lambda x: (jnp.sum(x**2), {'a': x})\nout = jax.value_and_grad(f, has_aux=True)(jnp.arange(3.))",
    'vjp_ct_dtype': 'y, f = jax.vjp(lambda x: x*2, jnp.ones(2))\nout = f(jnp.ones(2, jnp.float16))',
    'vjp_int_ct_err': 'y, f = jax.vjp(lambda x: x * 2, jnp.float32(1.0))\nout = f(1)',
    'vjp_weak_ct': 'y, f = jax.vjp(lambda x: x * 2, jnp.float32(1.0))\nout = f(1.0)',
    'vjp_wrong_ct': 'y, f = jax.vjp(lambda x: x*2, jnp.ones(2))\nout = f(jnp.ones(3))',
    'vmap_out_tree': "out = jax.vmap(lambda x: {'a': x, 'b': (x*2, x.sum())}, out_axes={'a': 0, 'b': (1, 0)})(jnp.ones((3,2)))",
    'vmap_switch': 'out = jax.vmap(lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda v: v*2], x))(jnp.array([0,1,2,5]), jnp.arange(4.))',
    'vmap_switch_grad': 'out = jax.vmap(jax.grad(lambda x, i: lax.switch(i, [jnp.sin, jnp.cos], x)))(jnp.array([1., 2.]), jnp.array([0, 1]))',
    'while_body_mismatch': 'out = lax.while_loop(lambda c: c < 10, lambda c: c*2.0, 1)',
}

RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    if sys.argv[1] == "jax":
      import jax, jax.numpy as jnp, jax.lax as lax
      import jax.tree_util as tu
    else:
      import hlox as jax, hlox.numpy as jnp, hlox.lax as lax
      import hlox.tree_util as tu

    def encode(tree):
      leaves = []
      for leaf in tu.tree_leaves(tree):
        if isinstance(leaf, str):
          leaves.append({"str": leaf})
          continue
        a = np.asarray(leaf)
        d = {"shape": list(a.shape), "dtype": str(getattr(leaf, "dtype", a.dtype)),
             "weak": bool(getattr(leaf, "weak_type", False))}
        if a.dtype.kind == "c":
          d["value"] = [np.real(a).tolist(), np.imag(a).tolist()]
        elif a.dtype.kind == "V":  # float0
          d["value"] = None
        else:
          d["value"] = np.asarray(a, np.float64).tolist()
        leaves.append(d)
      return {"leaves": leaves, "tree": str(tu.tree_structure(tree)).replace("PyTreeDef", "")}

    out = {}
    for name, body in json.loads(sys.stdin.read()).items():
      ns = {"jax": jax, "jnp": jnp, "lax": lax, "np": np, "tu": tu}
      try:
        exec(body, ns)
        out[name] = encode(ns["out"])
      except Exception as e:  # the exception type is part of the behavior compared
        out[name] = {"exc": type(e).__name__, "msg": str(e)[:500]}
    print("@@" + json.dumps(out))
""")


def _start(which, programs):
  env = {"JAX_PLATFORMS": "cpu", "PATH": "", "HLOX_ENABLE_CHECKS": "1"}
  proc = subprocess.Popen([sys.executable, "-c", RUNNER, which], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
  return proc, json.dumps(programs)


def _finish(started):
  proc, programs = started
  stdout, stderr = proc.communicate(programs, timeout=900)
  assert proc.returncode == 0, stderr[-3000:]
  line = [l for l in stdout.splitlines() if l.startswith("@@")][-1]
  return json.loads(line[2:])


@pytest.fixture(scope="module")
def results(request):
  # hlox runs in a subprocess too: the programs toggle no global state of this process.
  # JAX and hlox run side by side, on the selected programs only, once per test run.
  names = selected_params(request, "name")
  programs = {k: v for k, v in PROGRAMS.items() if k in names}

  def compute():
    jax_run, hlox_run = _start("jax", programs), _start("hlox", programs)
    return _finish(jax_run), _finish(hlox_run)
  return once_per_test_run("oracle_transforms", [RUNNER, programs], compute)


@pytest.mark.ci_sample(3)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_matches_jax(name, results):
  expected, got = results[0][name], results[1][name]
  if "exc" in expected or "exc" in got:
    assert got.get("exc") == expected.get("exc"), (expected, got)
    return
  assert got["tree"] == expected["tree"]
  for e, g in zip(expected["leaves"], got["leaves"]):
    if "str" in e:
      assert g.get("str") == e["str"]
      continue
    assert (g["shape"], g["dtype"], g["weak"]) == (e["shape"], e["dtype"], e["weak"])
    if e["value"] is not None:
      np.testing.assert_allclose(np.asarray(g["value"], np.float64),
                                 np.asarray(e["value"], np.float64),
                                 rtol=2e-6, atol=1e-6, equal_nan=True)
