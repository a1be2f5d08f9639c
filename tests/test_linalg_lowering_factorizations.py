"""The factorizations' and products' lowerings for CUDA, ROCm and TPU (read with
``jit(f).trace(...).lower(lowering_platforms=...)``; no GPU or TPU needed): the GPU kernels
(cuSOLVER/hipSOLVER, cuSPARSE, the plugins' own), TPU's custom calls, and the compositions
where neither exists, each compared with JAX's lowering for the same platform."""
import importlib.util
import re

import numpy as np
import pytest

import hlox
import hlox.numpy as hnp
from hlox.config import enable_x64
from util import LOWERING_RUNNER, custom_calls, run_in_jax, selected_params

F, D, C, Z, I = "float32", "float64", "complex64", "complex128", "int32"
PLATFORMS = ("cuda", "rocm", "tpu")
_PREFIX = {"cuda": "cu", "rocm": "hip"}


def gpu(*targets, tpu=(), rocm=None):
  """The expected custom-call targets per platform: ``targets`` on both GPUs, ``{p}`` standing
  for the platform's prefix (``cu``/``hip``); ``tpu`` (and ``rocm`` if it differs) given
  apart. An exception class instead of a list: the platform has no lowering."""
  spec = {p: [t.format(p=_PREFIX[p]) for t in targets] for p in ("cuda", "rocm")}
  if rocm is not None:
    spec["rocm"] = rocm
  spec["tpu"] = tpu if isinstance(tpu, type) else list(tpu)
  return spec


# name -> (body, [(shape, dtype) of the arguments], expected targets per platform). The body
# sees jax/jnp/lax/np and ``linalg`` (JAX's internal module, which has geqrf and geqp3): JAX's
# modules in the oracle's process, hlox's here. Both lower with 64-bit types enabled.
def _cases():
  cases = {}

  def add(name, body, args, spec):
    assert name not in cases
    cases[name] = (body, args, spec)

  chol = "lambda a: lax.linalg.cholesky(a)"
  potrf = gpu("{p}solver_potrf_ffi")  # TPU: stablehlo.cholesky, no custom call
  add("cholesky_f32", chol, [((3, 3), F)], potrf)
  add("cholesky_f64_batch", chol, [((2, 4, 4), D)], potrf)
  add("cholesky_c64", chol, [((3, 3), C)], potrf)
  add("cholesky_c128_batch2", chol, [((2, 1, 2, 2), Z)], potrf)

  upd = "lambda r, w: lax.linalg.cholesky_update(r, w)"
  only_cuda = dict(rocm=[])
  add("cholesky_update_f32", upd, [((4, 4), F), ((4,), F)],
      gpu("cu_cholesky_update_ffi", **only_cuda))
  add("cholesky_update_f64", upd, [((3, 3), D), ((3,), D)],
      gpu("cu_cholesky_update_ffi", **only_cuda))

  lu = "lambda a: lax.linalg.lu(a)"
  getrf = gpu("{p}solver_getrf_ffi", "{p}_lu_pivots_to_permutation", tpu=["LuDecomposition"])
  add("lu_f32", lu, [((3, 3), F)], getrf)
  add("lu_f64_tall_batch", lu, [((2, 4, 3), D)], getrf)
  add("lu_c64_wide", lu, [((3, 5), C)], getrf)
  add("lu_c128_batch", lu, [((2, 3, 3), Z)], getrf)

  piv = gpu("{p}_lu_pivots_to_permutation")
  add("lu_pivots_to_permutation", "lambda p: lax.linalg.lu_pivots_to_permutation(p, 5)",
      [((2, 3), I)], piv)
  add("lu_pivots_to_permutation_1d",
      "lambda p: lax.linalg.lu_pivots_to_permutation(p, 4)", [((4,), I)], piv)

  qrf = "lambda a: linalg.geqrf(a)"
  geqrf = gpu("{p}solver_geqrf_ffi", tpu=["Qr"])
  add("geqrf_f32_tall", qrf, [((4, 3), F)], geqrf)
  add("geqrf_f64", qrf, [((3, 3), D)], geqrf)
  add("geqrf_c64_wide_batch", qrf, [((2, 3, 5), C)], geqrf)
  add("geqrf_c128", qrf, [((5, 2), Z)], geqrf)

  geqp3 = gpu("{p}hybrid_geqp3", tpu=NotImplementedError)
  add("geqp3_f32", "lambda a, j: linalg.geqp3(a, j)", [((4, 3), F), ((3,), I)], geqp3)
  add("geqp3_c128_wide_batch", "lambda a, j: linalg.geqp3(a, j)",
      [((2, 3, 5), Z), ((2, 5), I)], geqp3)
  add("geqp3_f64_magma", "lambda a, j: linalg.geqp3(a, j, use_magma=True)",
      [((4, 4), D), ((4,), I)], geqp3)
  add("geqp3_c64_lapack", "lambda a, j: linalg.geqp3(a, j, use_magma=False)",
      [((3, 2), C), ((2,), I)], geqp3)

  hp = "lambda a, t: lax.linalg.householder_product(a, t)"
  orgqr = gpu("{p}solver_orgqr_ffi", tpu=["ProductOfElementaryHouseholderReflectors"])
  add("householder_product_f32", hp, [((4, 3), F), ((3,), F)], orgqr)
  add("householder_product_f64_fewer_taus", hp, [((5, 3), D), ((2,), D)], orgqr)
  add("householder_product_c64_batch", hp, [((2, 5, 3), C), ((2, 3), C)], orgqr)
  add("householder_product_c128", hp, [((3, 3), Z), ((3,), Z)], orgqr)

  ormqr = gpu("{p}solver_ormqr_ffi")  # TPU: a loop over the reflectors
  for name, left, transpose, args in [
      ("f32_left", True, False, [((4, 3), F), ((3,), F), ((4, 2), F)]),
      ("f64_left_t", True, True, [((4, 4), D), ((4,), D), ((4, 3), D)]),
      ("c64_right_t_batch", False, True, [((2, 5, 3), C), ((2, 3), C), ((2, 2, 5), C)]),
      ("c128_right", False, False, [((3, 2), Z), ((2,), Z), ((4, 3), Z)])]:
    add(f"ormqr_{name}",
        f"lambda a, t, c: lax.linalg.ormqr(a, t, c, left={left}, transpose={transpose})",
        args, ormqr)

  syrk = gpu("cusolver_syrk_ffi", rocm=[])
  sp = "lambda a, c: lax.linalg.symmetric_product(a, c, alpha=2., beta=.5)"
  add("symmetric_product_f32", sp, [((3, 4), F), ((3, 3), F)], syrk)
  add("symmetric_product_f64_batch", sp, [((2, 3, 2), D), ((2, 3, 3), D)], syrk)

  tri = "lambda dl, d, du, b: lax.linalg.tridiagonal_solve(dl, d, du, b)"
  gtsv2 = gpu("{p}sparse_gtsv2_ffi")  # TPU: Thomas's algorithm, two scans
  add("tridiagonal_solve_f32", tri, [((5,), F)] * 3 + [((5, 2), F)], gtsv2)
  add("tridiagonal_solve_f64_m3", tri, [((3,), D)] * 3 + [((3, 1), D)], gtsv2)
  add("tridiagonal_solve_c64_batch", tri, [((2, 4), C)] * 3 + [((2, 4, 3), C)], gtsv2)
  add("tridiagonal_solve_c128_m2", tri, [((2,), Z)] * 3 + [((2, 2), Z)], gpu())
  add("tridiagonal_solve_f32_m1_batch", tri, [((3, 1), F)] * 3 + [((3, 1, 2), F)], gpu())
  add("tridiagonal_solve_perturbed",
      "lambda dl, d, du, b: lax.linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=True)",
      [((2, 5), F)] * 3 + [((2, 5, 2), F)],
      gpu("{p}_tridiagonal_solve_perturbed", tpu=NotImplementedError))

  # Every platform: XLA's triangular_solve (no custom call).
  for name, params, args in [
      ("f32_left_lower", "left_side=True, lower=True", [((3, 3), F), ((3, 2), F)]),
      ("c64_right_adjoint", "transpose_a=True, conjugate_a=True", [((3, 3), C), ((2, 3), C)]),
      ("c128_conj_only", "left_side=True, conjugate_a=True", [((3, 3), Z), ((3, 1), Z)]),
      ("f64_unit_upper_batch", "left_side=True, unit_diagonal=True, transpose_a=True",
       [((2, 4, 4), D), ((2, 4, 2), D)])]:
    add(f"triangular_solve_{name}", f"lambda a, b: lax.linalg.triangular_solve(a, b, {params})",
        args, gpu())

  # Compositions over the primitives above.
  full_qr = gpu("{p}solver_geqrf_ffi", "{p}solver_orgqr_ffi",
                tpu=["Qr", "ProductOfElementaryHouseholderReflectors"])
  add("qr_reduced_f32", "lambda a: lax.linalg.qr(a, full_matrices=False)", [((5, 3), F)],
      full_qr)
  add("qr_c64_batch", "lambda a: jnp.linalg.qr(a)", [((2, 3, 4), C)], full_qr)
  add("qr_pivoting_f64", "lambda a: lax.linalg.qr(a, pivoting=True)", [((4, 3), D)],
      gpu("{p}hybrid_geqp3", "{p}solver_orgqr_ffi", tpu=NotImplementedError))
  solve = gpu("{p}solver_getrf_ffi", "{p}_lu_pivots_to_permutation", tpu=["LuDecomposition"])
  add("linalg_solve", "lambda a, b: jnp.linalg.solve(a, b)", [((2, 3, 3), F), ((2, 3, 2), F)],
      solve)
  add("linalg_inv", "lambda a: jnp.linalg.inv(a)", [((4, 4), D)], solve)
  add("linalg_det", "lambda a: jnp.linalg.det(a)", [((4, 4), C)], solve)
  add("linalg_cholesky", "lambda a: jnp.linalg.cholesky(a)", [((2, 3, 3), Z)], potrf)
  return cases


CASES = _cases()
PROGRAMS = {f"{name}-{platform}": (platform, body, args)
            for name, (body, args, _) in CASES.items() for platform in PLATFORMS}


def lower_in_hlox(platform, body, args):
  f = eval(body, {"jax": hlox, "jnp": hnp, "lax": hlox.lax, "np": np,
                  "linalg": hlox.lax.linalg})
  specs = [hlox.ShapeDtypeStruct(tuple(s), np.dtype(d)) for s, d in args]
  with enable_x64():
    return hlox.jit(f).trace(*specs).lower(lowering_platforms=(platform,)).as_text()


def _lower(program):
  return lower_in_hlox(*PROGRAMS[program])


_RUNNER = LOWERING_RUNNER.replace("from jax import lax\n",
                                  "from jax import lax\nfrom jax._src.lax import linalg\n")
assert _RUNNER != LOWERING_RUNNER


# --- the spec: each platform's targets (no JAX needed) -------------------------------------

@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_lowers_to_the_expected_targets(program):
  name, platform = program.rsplit("-", 1)
  expected = CASES[name][2][platform]
  if isinstance(expected, type):
    primitive = "tridiagonal_solve" if "tridiagonal" in name else "geqp3"
    with pytest.raises(expected, match=f"{primitive}.*'{platform}'"):
      _lower(program)
    return
  assert [c["target"] for c in custom_calls(_lower(program))] == expected


@pytest.mark.parametrize("platform", ["cuda", "rocm"])
def test_gpu_info_handling(platform):
  # As in JAX: potrf's failures (info != 0) become NaN; getrf's only for info < 0 (a zero
  # pivot still factors), and its 1-based pivots are made 0-based.
  text = lower_in_hlox(platform, "lambda a: lax.linalg.cholesky(a)", [((2, 3, 3), F)])
  assert re.search(r"compare EQ, %(\d+)#1, .*\n(.*\n)*?.*0x7FC00000(.*\n)*?.*select %\d+, %\1#0, ",
                   text), text
  text = lower_in_hlox(platform, "lambda a: lax.linalg.lu(a)", [((3, 3), D)])
  assert re.search(r"subtract %(\d+)#1, ", text), text
  assert re.search(r"compare GE, %(\d+)#2, .*\n(.*\n)*.*select %\d+, %\1#0, ", text), text
  assert "0x7FF8000000000000" in text


def test_cholesky_update_batches_take_the_composition_on_cuda():
  # The CUDA kernel updates one matrix; a batch (which JAX's primitive does not accept)
  # lowers by composition instead of misusing it.
  text = lower_in_hlox("cuda", "lambda r, w: jax.vmap(lax.linalg.cholesky_update)(r, w)",
                       [((2, 3, 3), F), ((2, 3), F)])
  assert custom_calls(text) == []


def test_tpu_tridiagonal_solve_matches_numpy():
  # TPU's composition (Thomas's algorithm), run here on the CPU.
  from hlox.lax.linalg.factorizations import _thomas_solve
  rng = np.random.default_rng(0)
  for batch, m, n, dtype in [((), 5, 2, np.float32), ((2, 3), 4, 1, np.complex64),
                             ((2,), 1, 3, np.float32), ((), 2, 2, np.float32)]:
    def rand(*shape):
      x = rng.standard_normal(shape)
      if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
      return x.astype(dtype)
    dl, d, du, b = rand(*batch, m), rand(*batch, m) + 4, rand(*batch, m), rand(*batch, m, n)
    dl[..., 0] = du[..., -1] = 0
    a = np.zeros(batch + (m, m), dtype)
    i = np.arange(m)
    a[..., i, i] = d
    a[..., i[1:], i[:-1]] = dl[..., 1:]
    a[..., i[:-1], i[1:]] = du[..., :-1]
    x = hlox.jit(_thomas_solve)(dl, d, du, b)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, b), rtol=1e-5, atol=1e-5)


# --- JAX's lowerings -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def jax_lowerings(request):
  names = selected_params(request, "program")
  return run_in_jax(_RUNNER, {k: v for k, v in PROGRAMS.items() if k in names})


@pytest.mark.jax_oracle
@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason="jax (the test oracle) is not installed")
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_custom_calls_match_jax(program, jax_lowerings):
  expected = jax_lowerings[program]
  if "error" in expected:
    with pytest.raises(Exception) as info:
      _lower(program)
    assert type(info.value).__name__ == expected["error"], (info.value, expected)
    return
  assert custom_calls(_lower(program)) == custom_calls(expected["text"])
