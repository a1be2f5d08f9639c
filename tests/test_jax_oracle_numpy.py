"""Differential tests for ``hlox.numpy`` and ``hlox.lax`` (non-parallel): the same programs
in hlox and in JAX (the oracle, run in a separate process so JAX never shares this process
with hlox). Programs may return an array or a tuple of arrays; an exception is a result too
(both libraries must raise). Skipped when JAX is not installed."""
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

# Each program is the body of a function of (lib, np) in which ``jnp`` and ``lax`` are bound
# to the library's numpy and lax modules.
PROGRAMS = {
    'logaddexp2': 'return jnp.logaddexp2(1., 2.)',
    'hypot': 'return jnp.hypot(3, 4)',
    'eq_mixed': 'return jnp.equal(jnp.array([1, 2]), 1.0)',
    'i32_f_weak': 'return jnp.int32(1) * 1.5',
    'wb_isnan': 'return jnp.isnan(1.0)',
    'wb_isinf': 'return jnp.isinf(jnp.asarray(1.0))',
    'wb_isposinf': 'return jnp.isposinf(jnp.asarray(1.0))',
    'wb_bitand': 'return (jnp.asarray(1.) > 0) & (jnp.asarray(2.) > 0)',
    'wb_jit': 'return lib.jit(lambda a: a > 1)(2.0)',
    'average_ret': 'return jnp.average(jnp.arange(6.).reshape(2,3), axis=1, weights=jnp.array([1., 0., 1.]), returned=True)',
    'method_searchsorted': 'return jnp.array([1, 3, 5]).searchsorted(4)',
    'method_compress': 'return jnp.array([1, 3, 5]).compress(jnp.array([True, False, True]))',
    'method_nonzero': 'return jnp.array([0,1,2]).nonzero()',
    'nonzero_size_fill': 'return jnp.nonzero(jnp.array([[0, 1], [2, 0]]), size=3, fill_value=-1)',
    'nonzero_jit': 'return lib.jit(lambda x: jnp.nonzero(x, size=4, fill_value=(7, 8)))(jnp.array([[0, 1], [2, 3]]))',
    'argwhere_size': 'return lib.jit(lambda x: jnp.argwhere(x, size=3, fill_value=9))(jnp.array([[0, 1], [2, 0]]))',
    'argwhere_0d': 'return jnp.argwhere(jnp.array(3))',
    'argwhere_0d_false': 'return jnp.argwhere(jnp.array(0))',
    'searchsorted': 'return jnp.searchsorted(jnp.array([1., 2., 2., 3.]), jnp.array([0., 2., 2.5, 4.]))',
    'searchsorted_nan': 'return jnp.searchsorted(jnp.array([1., 2., jnp.nan]), jnp.array([jnp.nan, 3.]))',
    'digitize_dec': 'return jnp.digitize(jnp.array([0.2, 6.4, 3.0]), jnp.array([10., 4., 2.5, 1.]))',
    'diff_prepend': 'return jnp.diff(jnp.array([1, 4, 9]), prepend=0, append=jnp.array([20, 30]))',
    'diff_bool': 'return jnp.diff(jnp.array([True, False, False]))',
    'intersect1d_idx': 'return jnp.intersect1d(jnp.array([3, 1, 2]), jnp.array([2, 1, 7]), return_indices=True)',
    'setdiff1d_size': 'return jnp.setdiff1d(jnp.array([3, 1, 2, 5]), jnp.array([2, 1]), size=4)',
    'unique_all': 'return tuple(jnp.unique_all(jnp.array([3, 1, 3])))',
    'unique_size_ret': 'return lib.jit(lambda x: jnp.unique(x, size=4, return_index=True, return_inverse=True, return_counts=True))(jnp.array([3, 1, 3, 2]))',
    'unique_eager_size': 'return jnp.unique(jnp.array([3,1,3,2]), size=6, return_index=True, return_inverse=True, return_counts=True, fill_value=9)',
    'bincount_len': 'return lib.jit(lambda x: jnp.bincount(x, length=3))(jnp.array([0, 1, 1, 5, -1]))',
    'histogram_range': 'return jnp.histogram(jnp.array([1., 2., 1., 4., 3.5, 7.]), bins=4, range=(0, 4))',
    'histogram_w_density': 'return jnp.histogram(jnp.array([1., 2., 1., 4.]), bins=jnp.array([0., 1., 2.5, 5.]), weights=jnp.array([1., 2., 3., 4.]), density=True)',
    'interp_lr': 'return jnp.interp(jnp.array([0., 4.]), jnp.array([1., 2., 3.]), jnp.array([10., 20., 0.]), left=-1, right=99)',
    'interp_period': 'return jnp.interp(jnp.array([-10., 190., 350.]), jnp.array([0., 90., 180., 270.]), jnp.array([0., 1., 2., 3.]), period=360)',
    'polyval_weak': 'return jnp.polyval(jnp.array([3., 0., 1.]), 2)',
    'polyder_int': 'return jnp.polyder(jnp.array([1, 2, 3, 4]))',
    'convolve_int': 'return jnp.convolve(jnp.array([1, 2, 3]), jnp.array([1, 1]))',
    'correlate_full': "return jnp.correlate(jnp.array([1., 2., 3.]), jnp.array([0., 1., 0.5]), mode='full')",
    'select_weak': 'x = jnp.arange(6); return jnp.select([x < 2], [1.5], default=0)',
    'compress_size': 'return jnp.compress(jnp.array([False, True, True]), jnp.arange(6).reshape(3, 2), axis=0, size=3, fill_value=-1)',
    'ravel_multi_index_F': "return jnp.ravel_multi_index((jnp.array([0, 2]), jnp.array([1, 3])), (3, 4), order='F')",
    'fill_diagonal': 'return jnp.fill_diagonal(jnp.zeros((3, 4)), 5, inplace=False)',
    'cross_axis': 'return jnp.cross(jnp.arange(6.).reshape(3, 2), jnp.ones((3, 2)), axisa=0, axisb=0)',
    'cov_w': 'return jnp.cov(jnp.array([[0., 2., 4.], [1., 1., 0.]]), fweights=jnp.array([1, 2, 1]), aweights=jnp.array([0.5, 1., 2.]))',
    'quantile_vec': 'return jnp.quantile(jnp.arange(12.).reshape(3, 4), jnp.array([0.1, 0.5]), axis=1)',
    'quantile_methods': "x = jnp.array([1., 3., 2., 7., 5.]); return jnp.stack([jnp.quantile(x, 0.4, method=m) for m in ('linear', 'lower', 'higher', 'midpoint', 'nearest')])",
    'nanmedian': 'return jnp.nanmedian(jnp.array([[1., jnp.nan, 4.], [2., 5., 3.]]), axis=1)',
    'gcd': 'return jnp.gcd(jnp.array([12, -18, 0, 7]), jnp.array([8, 12, 5, 0]))',
    'ldexp': 'return jnp.ldexp(jnp.array([1., 0.5]), jnp.array([3, -2]))',
    'frexp': 'return jnp.frexp(jnp.array([8., 0.3, 0., -5., jnp.inf]))',
    'array_equal_nan': 'return jnp.array_equal(jnp.array([1, jnp.nan]), jnp.array([1, jnp.nan]), equal_nan=True)',
    'isscalar': 'return jnp.array([jnp.isscalar(1.), jnp.isscalar(jnp.array(1.)), jnp.isscalar(np.float32(1)), jnp.isscalar(jnp.arange(2)), jnp.isscalar(np.array(1.)), jnp.isscalar([1])])',
    'delete_axis': 'return jnp.delete(jnp.arange(6).reshape(2, 3), 1, axis=1)',
    'apply_along_axis': 'return jnp.apply_along_axis(lambda v: v[0] + v[-1], 1, jnp.arange(12).reshape(2, 3, 2))',
    'vectorize_sig': "f = jnp.vectorize(lambda a, b: jnp.dot(a, b), signature='(n),(n)->()'); return f(jnp.ones((4, 3)), jnp.arange(3.))",
    'i0': 'return jnp.i0(jnp.array([0., 1., 5., 40., -3.]))',
    'gradient_x': 'return jnp.gradient(jnp.array([1., 2., 4., 7.]), jnp.array([0., 1., 3., 4.]))',
    'unwrap_period': 'return jnp.unwrap(jnp.array([1, 5, 9, 2, 6]), period=8)',
    'at_power': 'return jnp.full(3, 2.).at[1].power(3.)',
    'at_divide_w': 'return jnp.full(3, 2.).at[1].divide(3.)',
    'lax_conv': "return lax.conv(jnp.arange(25.).reshape(1, 1, 5, 5), jnp.arange(9.).reshape(1, 1, 3, 3), (1, 1), 'SAME')",
    'lax_conv_dil': 'return lax.conv_general_dilated(jnp.arange(10.).reshape(1, 1, 10), jnp.arange(3.).reshape(1, 1, 3), (1,), ((2, 2),), lhs_dilation=(2,), rhs_dilation=(2,))',
    'lax_conv_groups': "return lax.conv_general_dilated(jnp.arange(20.).reshape(1, 4, 5), jnp.arange(24.).reshape(4, 2, 3), (1,), 'SAME', feature_group_count=2)",
    'lax_conv_bgroups': "return lax.conv_general_dilated(jnp.arange(40.).reshape(4, 2, 5), jnp.arange(12.).reshape(2, 2, 3), (1,), 'VALID', batch_group_count=2)",
    'lax_conv_weird_layout': "return lax.conv_general_dilated(jnp.arange(60.).reshape(3, 1, 4, 5), jnp.arange(12.).reshape(2, 3, 1, 2), (1, 1), 'SAME', dimension_numbers=('HNWC', 'WHIO', 'CWNH'))",
    'lax_conv_pref': "return lax.conv(jnp.ones((1, 1, 4, 4), jnp.bfloat16), jnp.ones((1, 1, 2, 2), jnp.bfloat16), (1, 1), 'VALID', preferred_element_type=jnp.float32)",
    'lax_conv_grad': "f = lambda x, w: jnp.sum(lax.conv(x, w, (2, 1), 'SAME') ** 2); g = lib.grad(f, argnums=(0, 1))(jnp.arange(25.).reshape(1, 1, 5, 5) / 10, jnp.arange(6.).reshape(1, 1, 2, 3) / 5); return jnp.concatenate([g[0].ravel(), g[1].ravel()])",
    'lax_conv_vmap': "return lib.vmap(lambda x: lax.conv(x[None], jnp.ones((1, 1, 2)), (1,), 'VALID'))(jnp.arange(12.).reshape(3, 1, 4))",
    'lax_conv_bad_dtype': "return lax.conv(jnp.ones((1, 1, 4)), jnp.ones((1, 1, 2), jnp.int32), (1,), 'VALID')",
    'pad_linear_ramp': "return jnp.pad(jnp.arange(1., 4.), 2, mode='linear_ramp', end_values=(5, -1))",
    'pad_linear_ramp_int': "return jnp.pad(jnp.array([1, 5, 2]), (3, 2), mode='linear_ramp', end_values=(10, -3))",
    'pad_linear_ramp_2d': "return jnp.pad(jnp.arange(6.).reshape(2, 3), ((1, 2), (2, 1)), mode='linear_ramp')",
    'pad_mean_int': "return jnp.pad(jnp.array([1, 4, 2, 8]), 1, mode='mean', stat_length=2)",
    'pad_max_2d_sl': "return jnp.pad(jnp.arange(12).reshape(3, 4), ((1, 1), (1, 2)), mode='maximum', stat_length=((1, 2), (2, 1)))",
    'linspace_int_ne': 'return jnp.linspace(10, 1, 3, endpoint=False, dtype=int)',
    'isdtype': "return jnp.array([jnp.isdtype(jnp.float32, 'real floating'), jnp.isdtype(jnp.int8, 'integral'), jnp.isdtype(jnp.bool_, 'bool'), jnp.isdtype(jnp.bfloat16, 'real floating')])",
    'conv_t_same': "return lax.conv_transpose(jnp.arange(16.).reshape(1, 4, 4, 1), jnp.arange(18.).reshape(3, 3, 1, 2), (2, 2), 'SAME')",
    'conv_t_tk': "return lax.conv_transpose(jnp.arange(16.).reshape(1, 4, 4, 1), jnp.arange(18.).reshape(3, 3, 2, 1), (2, 1), 'SAME', transpose_kernel=True)",
    'conv_t_nchw': "return lax.conv_transpose(jnp.arange(32.).reshape(1, 2, 4, 4), jnp.arange(36.).reshape(3, 2, 3, 2), (2, 2), 'SAME', dimension_numbers=('NCHW', 'OIHW', 'NCHW'))",
    'scatter_sub': 'dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)); return lax.scatter_sub(jnp.zeros(4), jnp.array([[1], [1], [3]]), jnp.ones(3), dn)',
    'broadcast_to_rank': 'return lax.broadcast_to_rank(jnp.arange(3), 3)',
    'hypot_s': 'return jnp.hypot(jnp.asarray(3.), 1.5)',
    'hypot_v': 'return jnp.hypot(jnp.full(2, 3.), 1.5)',
    'logaddexp2_v': 'return jnp.logaddexp2(jnp.full(2, 3.), 1.5)',
    'heaviside_v': 'return jnp.heaviside(jnp.full(2, 3.), 1.5)',
    'logical_and_s': 'return jnp.logical_and(jnp.asarray(3.), 1.5)',
    'logical_and_v': 'return jnp.logical_and(jnp.full(2, 3.), 1.5)',
    'isnan_si': 'return jnp.isnan(3)',
    'rint_si': 'return jnp.rint(3)',
    'isreal_v': 'return jnp.isreal(jnp.full(2, 3.))',
    'iscomplex_s': 'return jnp.iscomplex(jnp.asarray(3.))',
    'sinc_v': 'return jnp.sinc(jnp.full(2, 3.))',
    'gcd_bb': 'return jnp.gcd(jnp.array([True]), jnp.array([False]))',
    'stack_out': 'return jnp.stack([jnp.ones(2)], axis=0, out=None)',
    'idx_oob_static_clamps': 'return jnp.stack([jnp.arange(5)[10], jnp.arange(5)[-10], jnp.arange(6).reshape(2, 3)[5, 1]])',
    'at_static_oob_dropped': 'return jnp.stack([jnp.zeros(5).at[7].set(1.), jnp.zeros(5).at[-7].add(1.)])',
    'det_batch': 'return jnp.linalg.det(jnp.stack([jnp.array([[4., 1., 2.], [1., 5., 3.], [2., 3., 6.]]), jnp.array([[0., 2., 1.], [1., 1., 0.], [3., 0., 2.]])]))',
    'slogdet_neg': 'return tuple(jnp.linalg.slogdet(jnp.array([[0., 1.], [1., 0.]])))',
    'solve_batch': 'return jnp.linalg.solve(jnp.stack([jnp.array([[4., 1., 2.], [1., 5., 3.], [2., 3., 6.]]), jnp.array([[0., 2., 1.], [1., 1., 0.], [3., 0., 2.]])]), jnp.arange(6.).reshape(2, 3, 1))',
    'cholesky_upper': 'return jnp.linalg.cholesky(jnp.array([[4., 1., 2.], [1., 5., 3.], [2., 3., 6.]]), upper=True)',
    'norm_vec_ords': 'x = jnp.array([3., -4., 0.]); return jnp.stack([jnp.linalg.norm(x, o) for o in (None, 1, 2, 3, jnp.inf, -jnp.inf, 0, -1)])',
    'norm_3d_axes': "return jnp.linalg.norm(jnp.arange(24.).reshape(2, 3, 4), ord='fro', axis=(1, 2))",
    'matrix_power_neg': 'return jnp.linalg.matrix_power(jnp.array([[4., 1., 2.], [1., 5., 3.], [2., 3., 6.]]), -2)',
    'grad_det': 'return lib.grad(jnp.linalg.det)(jnp.array([[0., 2., 1.], [1., 1., 0.], [3., 0., 2.]]))',
    'grad_solve': 'return lib.grad(lambda a: jnp.linalg.solve(a, jnp.array([1., 2., 3.])).sum())(jnp.array([[4., 1., 2.], [1., 5., 3.], [2., 3., 6.]]))',
    'vmap_det': 'return lib.vmap(jnp.linalg.det)(jnp.stack([jnp.array([[4., 1., 2.], [1., 5., 3.], [2., 3., 6.]]), jnp.array([[0., 2., 1.], [1., 1., 0.], [3., 0., 2.]])]))',
}

_PRELUDE = "def prog(lib, np):\n  jnp = lib.numpy; lax = lib.lax\n  "

_ENCODE = textwrap.dedent("""
    def encode(r):
      if isinstance(r, (tuple, list)):
        return [encode(x) for x in r]
      a = np.asarray(r)
      value = (np.asarray(a, dtype=np.float64) if a.dtype.kind != "c" else
               np.stack([a.real, a.imag]).astype(np.float64))
      return {"value": value.tolist(), "shape": list(a.shape),
              "dtype": str(getattr(r, "dtype", a.dtype)),
              "weak": bool(getattr(r, "weak_type", False))}
""")

JAX_RUNNER = _ENCODE + textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax, jax.numpy, jax.lax
    programs = json.loads(sys.stdin.read())
    out = {}
    for name, body in programs.items():
      ns = {}
      exec(PRELUDE + body, ns)
      try:
        out[name] = encode(ns["prog"](jax, np))
      except Exception as e:  # the error is the expected result
        out[name] = {"error": type(e).__name__}
    print(json.dumps(out))
""").replace("PRELUDE", repr(_PRELUDE))

_ns = {"np": np}
exec(_ENCODE, _ns)
_encode = _ns["encode"]


@pytest.fixture(scope="module")
def jax_results(request):
  names = selected_params(request, "name")
  return run_in_jax(JAX_RUNNER, {k: v for k, v in PROGRAMS.items() if k in names})


def _check(got, expected, name):
  if isinstance(expected, list):
    assert isinstance(got, list) and len(got) == len(expected), name
    for g, e in zip(got, expected):
      _check(g, e, name)
    return
  assert got["shape"] == expected["shape"], name
  assert got["dtype"] == expected["dtype"], name
  assert got["weak"] == expected["weak"], name
  np.testing.assert_allclose(np.asarray(got["value"], dtype=np.float64),
                             np.asarray(expected["value"], dtype=np.float64),
                             rtol=2e-6, atol=1e-6, equal_nan=True, err_msg=name)


class _HloxLib:
  numpy, lax = hnp, hlox.lax
  jit, grad, vmap = hlox.jit, hlox.grad, hlox.vmap


@pytest.mark.ci_sample(3)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_matches_jax(name, jax_results):
  ns = {}
  exec(_PRELUDE + PROGRAMS[name], ns)
  expected = jax_results[name]
  if "error" in expected and not isinstance(expected, list):
    with pytest.raises(Exception):
      ns["prog"](_HloxLib, np)
    return
  _check(_encode(ns["prog"](_HloxLib, np)), expected, name)
