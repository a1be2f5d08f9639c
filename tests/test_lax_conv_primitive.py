"""``conv_general_dilated_p``: one ``stablehlo.convolution`` with its own rules, checked
against a NumPy reference and against JAX (in its own process): 1-D/2-D/3-D, strides,
padding, dilations, feature and batch groups, layouts, float32/float64/complex/int;
gradients (order 2, forward and reverse), vmap over lhs/rhs/both against a loop, jit against
eager, and the printed jaxpr."""
from __future__ import annotations

import json

import numpy as np
import pytest

import hlox
import hlox.numpy as hnp
from hlox import lax
from hlox.config import enable_x64
from tests.check_grads import check_grads
from tests.util import assert_close, run_in_jax

# --- a NumPy reference -------------------------------------------------------------------


def _dilate(x, axes, dilation):
  for ax, d in zip(axes, dilation):
    if d > 1 and x.shape[ax]:
      shape = list(x.shape)
      shape[ax] = (shape[ax] - 1) * d + 1
      out = np.zeros(shape, x.dtype)
      idx = [slice(None)] * x.ndim
      idx[ax] = slice(None, None, d)
      out[tuple(idx)] = x
      x = out
  return x


def _pad(x, axes, pads):
  for ax, (lo, hi) in zip(axes, pads):
    width = [(0, 0)] * x.ndim
    width[ax] = (max(lo, 0), max(hi, 0))
    x = np.pad(x, width)
    idx = [slice(None)] * x.ndim
    idx[ax] = slice(max(-lo, 0), x.shape[ax] - max(-hi, 0))
    x = x[tuple(idx)]
  return x


def conv_reference(lhs, rhs, strides, pads, lhs_dil, rhs_dil, dn, G=1, B=1,
                   dtype=None):
  """Cross-correlation in the canonical layouts, by explicit windows (float64/complex)."""
  lhs_spec, rhs_spec, out_spec = dn
  work = np.complex128 if np.iscomplexobj(lhs) else np.float64
  x = np.transpose(lhs, lhs_spec).astype(work)
  w = np.transpose(rhs, rhs_spec).astype(work)
  sp = list(range(2, x.ndim))
  x = _pad(_dilate(x, sp, lhs_dil), sp, pads)
  w = _dilate(w, sp, rhs_dil)
  N, C = x.shape[:2]
  O, I = w.shape[:2]
  k_sp = w.shape[2:]
  out_sp = tuple(max(0, (n - k) // s + 1) if n >= k else 0
                 for n, k, s in zip(x.shape[2:], k_sp, strides))
  out = np.zeros((N // B, O) + out_sp, work)
  for pos in np.ndindex(*out_sp):
    idx = tuple(slice(p * s, p * s + k) for p, s, k in zip(pos, strides, k_sp))
    win = x[(slice(None), slice(None)) + idx]                     # (N, C, *k)
    if B > 1:
      win = win.reshape((B, N // B, C, -1))
      wg = w.reshape((B, O // B, I, -1))
      r = np.einsum("bnck,bock->nbo", win, wg).reshape(N // B, O)
    else:
      win = win.reshape((N, G, C // G, -1))
      wg = w.reshape((G, O // G, I, -1))
      r = np.einsum("ngck,gock->ngo", win, wg).reshape(N, O)
    out[(slice(None), slice(None)) + pos] = r
  out = np.transpose(out, np.argsort(out_spec))
  return out.astype(dtype or lhs.dtype)


def _spec(dimension_numbers, nd):
  dn = lax.conv_dimension_numbers((1,) * nd, (1,) * nd, dimension_numbers)
  return tuple(dn)


def _pads(padding, lhs_shape, rhs_shape, dn, strides, lhs_dil, rhs_dil):
  """Padding strings as explicit pairs, computed independently of hlox."""
  if not isinstance(padding, str):
    return padding
  lhs_spec, rhs_spec, _ = dn
  pads = []
  for i, s in enumerate(strides):
    n = lhs_shape[lhs_spec[2 + i]]
    n = (n - 1) * lhs_dil[i] + 1
    k = (rhs_shape[rhs_spec[2 + i]] - 1) * rhs_dil[i] + 1
    if padding == "VALID":
      pads.append((0, 0))
      continue
    total = max(0, (-(-n // s) - 1) * s + k - n)
    lo = total // 2 if padding == "SAME" else total - total // 2
    pads.append((lo, total - lo))
  return pads


# name: (lhs shape, rhs shape, strides, padding, lhs_dilation, rhs_dilation, layouts, G, B)
CASES = {
    "1d": ((2, 3, 11), (4, 3, 3), (1,), "VALID", None, None, None, 1, 1),
    "1d_stride_pad": ((2, 2, 10), (3, 2, 4), (3,), ((2, 1),), None, None, None, 1, 1),
    "1d_negative_pad": ((1, 2, 10), (2, 2, 3), (1,), ((-2, 1),), None, None, None, 1, 1),
    "2d_same": ((2, 3, 7, 6), (4, 3, 3, 2), (2, 1), "SAME", None, None, None, 1, 1),
    "2d_same_lower": ((1, 2, 6, 5), (2, 2, 2, 2), (2, 2), "SAME_LOWER", None, None, None,
                      1, 1),
    "2d_dilated": ((2, 2, 9, 8), (3, 2, 3, 2), (1, 2), ((1, 2), (0, 1)), (2, 1), (1, 3),
                   None, 1, 1),
    "2d_nhwc": ((2, 8, 7, 4), (3, 3, 4, 6), (1, 1), "SAME", None, (2, 1),
                ("NHWC", "HWIO", "NHWC"), 1, 1),
    "2d_weird_layout": ((7, 2, 6, 3), (2, 3, 3, 4), (2, 1), "VALID", None, None,
                        ("HNWC", "WHIO", "CWNH"), 1, 1),
    "2d_groups": ((2, 6, 5, 5), (4, 3, 2, 2), (1, 1), "SAME", None, None, None, 2, 1),
    "2d_depthwise": ((2, 4, 6, 6), (8, 1, 3, 3), (2, 2), "SAME", None, None, None, 4, 1),
    "2d_batch_groups": ((4, 3, 6, 5), (6, 3, 2, 3), (1, 1), "VALID", None, None, None, 1, 2),
    "3d": ((1, 2, 5, 4, 6), (3, 2, 2, 3, 2), (1, 2, 1), ((1, 0), (1, 1), (0, 2)), (1, 1, 2),
           (2, 1, 1), None, 1, 1),
    "3d_ndhwc_groups": ((2, 4, 5, 3, 4), (2, 2, 3, 2, 6), (1, 1, 2), "SAME", None, None,
                        ("NDHWC", "DHWIO", "NDHWC"), 2, 1),
}


def _args(name, dtype, seed=0):
  lhs_shape, rhs_shape = CASES[name][:2]
  rng = np.random.default_rng(seed)
  make = lambda s: rng.standard_normal(s).astype(dtype)  # noqa: E731
  return make(lhs_shape), make(rhs_shape)


def _hlox_conv(name, **extra):
  _, _, strides, padding, ld, rd, layouts, G, B = CASES[name]
  return lambda x, w: lax.conv_general_dilated(  # noqa: E731
      x, w, strides, padding, ld, rd, layouts, feature_group_count=G, batch_group_count=B,
      **extra)


def _reference(name, x, w, dtype=None):
  lhs_shape, rhs_shape, strides, padding, ld, rd, layouts, G, B = CASES[name]
  n_sp = len(lhs_shape) - 2
  ld, rd = ld or (1,) * n_sp, rd or (1,) * n_sp
  dn = _spec(layouts, len(lhs_shape))
  pads = _pads(padding, lhs_shape, rhs_shape, dn, strides, ld, rd)
  return conv_reference(x, w, strides, pads, ld, rd, dn, G, B, dtype)


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_numpy_float32_eager_and_jit(name):
  x, w = _args(name, np.float32)
  f = _hlox_conv(name)
  expected = _reference(name, x, w)
  assert_close(f(x, w), expected, np.float32, rtol=1e-4, atol=1e-4)
  assert_close(hlox.jit(f)(x, w), expected, np.float32, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["1d_stride_pad", "2d_dilated", "2d_batch_groups",
                                  "3d_ndhwc_groups"])
def test_against_numpy_float64(name):
  with enable_x64():
    x, w = _args(name, np.float64)
    out = _hlox_conv(name)(x, w)
    assert_close(out, _reference(name, x, w), np.float64)


def test_complex_int_and_preferred_element_type():
  x, w = _args("2d_groups", np.float32)
  xc = (x + 1j * x[::-1]).astype(np.complex64)
  wc = (w - 0.5j * w[::-1]).astype(np.complex64)
  f = _hlox_conv("2d_groups")
  assert_close(f(xc, wc), _reference("2d_groups", xc, wc), np.complex64, rtol=1e-4, atol=1e-4)
  xi, wi = (x * 3).astype(np.int32), (w * 3).astype(np.int32)
  assert_close(f(xi, wi), _reference("2d_groups", xi, wi), np.int32)
  g = _hlox_conv("2d_groups", preferred_element_type=np.float32)
  assert_close(g(xi.astype(np.int8), wi.astype(np.int8)),
               _reference("2d_groups", xi, wi, np.float32), np.float32)
  b = hnp.asarray(x).astype(hnp.bfloat16), hnp.asarray(w).astype(hnp.bfloat16)
  out = g(*b)
  assert out.dtype == np.float32
  assert_close(out, _reference("2d_groups", np.asarray(b[0].astype(np.float32)),
                               np.asarray(b[1].astype(np.float32))), np.float32,
               rtol=1e-2, atol=1e-2)


def test_empty_operands():
  x = np.zeros((0, 2, 5), np.float32)
  w = np.ones((3, 2, 2), np.float32)
  assert lax.conv_general_dilated(x, w, (1,), "VALID").shape == (0, 3, 4)
  x = np.ones((2, 2, 1), np.float32)  # window larger than the input: an empty output
  out = lax.conv_general_dilated(x, w, (1,), "VALID")
  assert out.shape == (2, 3, 0)
  g = hlox.grad(lambda x, w: hnp.sum(lax.conv_general_dilated(x, w, (1,), "VALID")),
                argnums=(0, 1))(x, w)
  assert_close(g[0], np.zeros_like(x))
  assert_close(g[1], np.zeros_like(w))


# --- the jaxpr ---------------------------------------------------------------------------


def test_jaxpr_is_one_convolution():
  x, w = _args("2d_nhwc", np.float32)
  f = _hlox_conv("2d_nhwc")
  text = str(hlox.make_jaxpr(f)(x, w))
  assert text.count("conv_general_dilated[") == 1
  assert "slice" not in text and "dot_general" not in text
  grad_text = str(hlox.make_jaxpr(hlox.grad(lambda x, w: hnp.sum(f(x, w) ** 2),
                                            argnums=(0, 1)))(x, w))
  assert grad_text.count("conv_general_dilated[") == 3
  assert "dot_general" not in grad_text
  assert lax.conv_general_dilated_p.name == "conv_general_dilated"
  out = hlox.eval_shape(f, x, w)
  assert out.shape == _reference("2d_nhwc", x, w).shape


def test_lowers_to_one_stablehlo_convolution_with_precision():
  x, w = _args("2d_groups", np.float32)
  f = _hlox_conv("2d_groups", precision=(lax.Precision.HIGHEST, "default"))
  assert "precision=(Precision.HIGHEST, Precision.DEFAULT)" in str(hlox.make_jaxpr(f)(x, w))
  text = hlox.jit(f).lower(x, w).as_text()
  assert text.count("stablehlo.convolution") == 1 and "stablehlo.slice" not in text
  assert "feature_group_count = 2" in text and "precision HIGHEST" in text
  assert_close(f(x, w), _reference("2d_groups", x, w), np.float32, rtol=1e-4, atol=1e-4)


# --- gradients ---------------------------------------------------------------------------

GRAD_CASES = {
    "1d_stride_pad": ((1, 2, 6), (2, 2, 3), (2,), ((2, 1),), None, None, None, 1, 1),
    "2d_dilated": ((1, 2, 5, 4), (2, 2, 2, 2), (2, 1), ((1, 0), (0, 1)), (2, 1), (1, 2),
                   None, 1, 1),
    "2d_groups_nhwc": ((2, 4, 3, 4), (2, 2, 2, 4), (1, 1), "SAME", None, None,
                       ("NHWC", "HWIO", "NHWC"), 2, 1),
    "2d_batch_groups": ((4, 2, 4, 3), (4, 2, 2, 2), (1, 1), "VALID", None, None, None, 1, 2),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_check_grads_order2(name):
  lhs_shape, rhs_shape, strides, padding, ld, rd, layouts, G, B = GRAD_CASES[name]
  rng = np.random.default_rng(1)
  with enable_x64():
    x = rng.standard_normal(lhs_shape)
    w = rng.standard_normal(rhs_shape)
    f = lambda x, w: lax.conv_general_dilated(  # noqa: E731
        x, w, strides, padding, ld, rd, layouts, feature_group_count=G, batch_group_count=B)
    check_grads(f, (x, w), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


def test_check_grads_complex():
  # Complex operands lower to three real convolutions; their rules are the same.
  rng = np.random.default_rng(6)
  with enable_x64():
    x = rng.standard_normal((1, 4, 3, 2)) + 1j * rng.standard_normal((1, 4, 3, 2))
    w = rng.standard_normal((2, 2, 2, 3)) + 1j * rng.standard_normal((2, 2, 2, 3))
    f = lambda x, w: lax.conv_general_dilated(  # noqa: E731
        x, w, (2, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    check_grads(f, (x, w), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


# --- vmap --------------------------------------------------------------------------------

VMAP_CASES = ["1d_stride_pad", "2d_nhwc", "2d_groups", "2d_batch_groups", "2d_weird_layout"]


@pytest.mark.parametrize("name", VMAP_CASES)
@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (2, 1)])
def test_vmap_matches_loop(name, in_axes):
  rng = np.random.default_rng(2)
  lhs_shape, rhs_shape = CASES[name][:2]
  V = 3
  xs = rng.standard_normal(lhs_shape + (V,)).astype(np.float32)
  ws = rng.standard_normal(rhs_shape + (V,)).astype(np.float32)
  xs, ws = np.moveaxis(xs, -1, in_axes[0] or 0), np.moveaxis(ws, -1, in_axes[1] or 0)
  x0, w0 = _args(name, np.float32)
  args = [xs if in_axes[0] is not None else x0, ws if in_axes[1] is not None else w0]
  f = _hlox_conv(name)
  out = hlox.vmap(f, in_axes=in_axes)(*args)
  take = lambda a, ax, i: a if ax is None else np.take(a, i, axis=ax)  # noqa: E731
  expected = np.stack([_reference(name, take(args[0], in_axes[0], i),
                                  take(args[1], in_axes[1], i)) for i in range(V)])
  assert_close(out, expected, np.float32, rtol=1e-4, atol=1e-4)
  if in_axes == (0, 0):
    jitted = hlox.jit(hlox.vmap(f, in_axes=in_axes))(*args)
    assert_close(jitted, expected, np.float32, rtol=1e-4, atol=1e-4)


def test_vmap_of_grad_and_empty_batch():
  rng = np.random.default_rng(3)
  xs = rng.standard_normal((3, 2, 4, 5, 5)).astype(np.float32)
  w = rng.standard_normal((4, 2, 2, 2)).astype(np.float32)
  f = _hlox_conv("2d_groups")
  loss = lambda x, w: hnp.sum(hnp.sin(f(x, w)))  # noqa: E731
  gx, gw = hlox.vmap(hlox.grad(loss, argnums=(0, 1)), in_axes=(0, None))(xs, w)
  for i in range(3):
    ex, ew = hlox.grad(loss, argnums=(0, 1))(xs[i], w)
    assert_close(gx[i], ex, np.float32, rtol=1e-4, atol=1e-4)
    assert_close(gw[i], ew, np.float32, rtol=1e-4, atol=1e-4)
  empty = hlox.vmap(f, in_axes=(0, None))(np.zeros((0, 2, 4, 5, 5), np.float32), w)
  assert empty.shape == (0, 2, 4, 5, 5)


# --- errors ------------------------------------------------------------------------------


def test_errors_name_the_function_and_shapes():
  x = np.ones((1, 4, 5, 5), np.float32)
  w = np.ones((6, 2, 3, 3), np.float32)
  with pytest.raises(TypeError, match="same dtypes"):
    lax.conv_general_dilated(x, w.astype(np.int32), (1, 1), "VALID", feature_group_count=2)
  with pytest.raises(ValueError, match=r"conv_general_dilated.*f32\[1,4,5,5\].*4 // 4 != 2"):
    lax.conv_general_dilated(x, w, (1, 1), "VALID", feature_group_count=4)
  with pytest.raises(ValueError, match="3 does not divide 4"):
    lax.conv_general_dilated(x, w, (1, 1), "VALID", feature_group_count=3)
  with pytest.raises(ValueError, match="must divide lhs batch"):
    lax.conv_general_dilated(x, np.ones((6, 4, 3, 3), np.float32), (1, 1), "VALID",
                             batch_group_count=2)
  with pytest.raises(ValueError, match="window_strides"):
    lax.conv_general_dilated(x, w, (1,), "VALID", feature_group_count=2)
  with pytest.raises(ValueError, match="at most one"):
    lax.conv_general_dilated(np.ones((2, 4, 5, 5), np.float32), np.ones((4, 2, 3, 3),
                             np.float32), (1, 1), "VALID", feature_group_count=2,
                             batch_group_count=2)
  with pytest.raises(TypeError, match="preferred_element_type"):
    lax.conv_general_dilated(x, w, (1, 1), "VALID", feature_group_count=2,
                             preferred_element_type=np.int32)
  # Ranks that differ: layouts to normalize raise TypeError, explicit dimension numbers the
  # primitive's ValueError (both as in JAX).
  with pytest.raises(TypeError, match="requires lhs and rhs ndim to be equal"):
    lax.conv_general_dilated(x[0], w, (1,), "VALID")
  dn = lax.ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2))
  with pytest.raises(ValueError, match="lhs and rhs must have the same number of dimensions"):
    lax.conv_general_dilated(x[0], w, (1,), ((0, 0),), dimension_numbers=dn)


# --- against JAX -------------------------------------------------------------------------

_JAX_SCRIPT = r"""
import json, sys
import numpy as np
import jax, jax.numpy as jnp
from jax import lax
jax.config.update("jax_enable_x64", True)
progs = json.loads(sys.stdin.read())
out = {}
for name, p in progs.items():
  x, w = (np.asarray(a, p["dtype"]) for a in p["args"])
  kw = p["kw"]
  if kw.get("dimension_numbers"):
    kw["dimension_numbers"] = tuple(kw["dimension_numbers"])
  if isinstance(kw.get("padding"), list):
    kw["padding"] = [tuple(q) for q in kw["padding"]]
  fn = lax.conv_transpose if p["transpose"] else lax.conv_general_dilated
  f = lambda x, w: fn(x, w, **kw)
  both = jax.jit(lambda x, w: (f(x, w),) + jax.grad(lambda x, w: jnp.sum(jnp.sin(f(x, w))),
                                                    argnums=(0, 1))(x, w))
  y, gx, gw = both(x, w)
  out[name] = [np.asarray(v).tolist() for v in (y, gx, gw)]
print(json.dumps(out))
"""


def _jax_programs():
  progs, hlox_fns = {}, {}
  for name, (_, _, strides, padding, ld, rd, layouts, G, B) in CASES.items():
    for dtype in ("float32", "float64"):
      if dtype == "float64" and name not in ("2d_dilated", "3d_ndhwc_groups"):
        continue
      kw = dict(window_strides=strides, padding=padding, lhs_dilation=ld, rhs_dilation=rd,
                dimension_numbers=layouts, feature_group_count=G, batch_group_count=B)
      x, w = _args(name, dtype, seed=4)
      progs[f"{name}_{dtype}"] = {"args": [x.tolist(), w.tolist()], "dtype": dtype,
                                  "kw": kw, "transpose": False}
      hlox_fns[f"{name}_{dtype}"] = (lax.conv_general_dilated, kw, x, w, dtype)
  rng = np.random.default_rng(5)
  x = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
  for padding, tk in (("SAME", False), ("VALID", True), ([(1, 2), (0, 1)], True)):
    # With transpose_kernel the kernel's I and O swap places.
    w = rng.standard_normal((3, 2, 4, 3) if tk else (3, 2, 3, 4)).astype(np.float32)
    kw = dict(strides=(2, 1), padding=padding, transpose_kernel=tk,
              dimension_numbers=("NHWC", "HWIO", "NHWC"))
    if tk:
      kw["rhs_dilation"] = (1, 2)
    key = f"conv_transpose_{padding}_{tk}"
    progs[key] = {"args": [x.tolist(), w.tolist()], "dtype": "float32", "kw": kw,
                  "transpose": True}
    hlox_fns[key] = (lax.conv_transpose, kw, x, w, "float32")
  return progs, hlox_fns


def test_against_jax_values_and_gradients():
  pytest.importorskip("jax")
  progs, hlox_fns = _jax_programs()
  expected = run_in_jax(_JAX_SCRIPT, json.loads(json.dumps(progs)))
  mismatches = []
  for key, (fn, kw, x, w, dtype) in sorted(hlox_fns.items()):
    with enable_x64(dtype == "float64"):
      f = lambda x, w: fn(x, w, **kw)  # noqa: E731
      both = hlox.jit(lambda x, w: (f(x, w),) + hlox.grad(  # one compile per case
          lambda x, w: hnp.sum(hnp.sin(f(x, w))), argnums=(0, 1))(x, w))
      y, gx, gw = both(x, w)
      tol = 1e-4 if dtype == "float32" else 1e-10
      for got, want, what in zip((y, gx, gw), expected[key], ("out", "grad_lhs", "grad_rhs")):
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape or not np.allclose(got, want, rtol=tol, atol=tol):
          mismatches.append(f"{key} {what}: {got.shape} vs JAX's {want.shape}")
        assert str(got.dtype) == dtype
  assert not mismatches, "\n".join(mismatches)
