"""hlox.image (resize, scale_and_translate) against JAX, with jit, vmap and gradients."""
import importlib.util

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import image
from hlox.config import enable_x64

from tests.check_grads import check_grads
from tests.util import check_against_jax_modules

X = "np.arange(30.0, dtype=np.float32).reshape(5, 6) ** 1.5"
PROGRAMS = {
    f"resize_{method}_{shape[0]}x{shape[1]}": (
        "image", f"return m.resize({X}, {shape}, {method!r})")
    for method in ("nearest", "linear", "lanczos3", "lanczos5", "cubic", "area")
    for shape in ((3, 4), (8, 9))
}
PROGRAMS.update({
    f"resize_{method}_noaa": ("image", f"return m.resize({X}, (3, 4), {method!r}, "
                                       "antialias=False)")
    for method in ("linear", "cubic-pytorch")
})
PROGRAMS.update({
    "resize_int_linear": ("image", "return m.resize(np.arange(12).reshape(3, 4), (5, 7), "
                                   "'bilinear')"),
    "resize_int_nearest": ("image", "return m.resize(np.arange(12).reshape(3, 4), (5, 7), "
                                    "'nearest')"),
    "resize_3d_channels": ("image", "return m.resize(np.arange(48.0).reshape(4, 4, 3), "
                                    "(6, 2, 3), 'lanczos3')"),
    "scale_translate": ("image", f"return m.scale_and_translate({X}, (7, 4), (0, 1), "
                                 "np.array([1.3, 0.6]), np.array([0.5, -1.0]), 'cubic')"),
    "scale_translate_noaa": ("image", f"return m.scale_and_translate({X}, (7, 4), (1,), "
                                      "np.array([0.6]), np.array([0.2]), 'linear', "
                                      "antialias=False)"),
    "scale_translate_pytorch": ("image", f"return m.scale_and_translate({X}, (7, 4), (0, 1),"
                                         " np.array([1.3, 0.6]), np.array([0.5, 0.0]), "
                                         "'cubic-pytorch', antialias=False)"),
})


@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason="jax (the test oracle) is not installed")
@pytest.mark.jax_oracle
@pytest.mark.slow  # one JAX subprocess compiling every program: 30-45 s
def test_matches_jax():
  check_against_jax_modules(PROGRAMS, rtol=1e-4, atol=1e-4)


def test_resize_identity_and_method_names():
  x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
  np.testing.assert_allclose(np.asarray(image.resize(x, (4, 5), "lanczos5")), x, rtol=1e-6)
  a = image.resize(x, (7, 3), image.ResizeMethod.LINEAR)
  b = image.resize(x, (7, 3), "trilinear")
  np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  assert image.ResizeMethod.from_string("bicubic") is image.ResizeMethod.CUBIC


def test_jit_vmap_and_grad():
  rng = np.random.default_rng(1)
  xs = rng.standard_normal((3, 5, 6)).astype(np.float32)
  f = lambda x: image.scale_and_translate(x, (4, 8), (0, 1), jnp.array([0.8, 1.4]),
                                          jnp.array([0.1, 0.3]), "lanczos3")
  np.testing.assert_allclose(np.asarray(hlox.jit(f)(xs[0])), np.asarray(f(xs[0])), rtol=1e-5,
                             atol=1e-6)
  np.testing.assert_allclose(np.asarray(hlox.vmap(f)(xs)),
                             np.stack([np.asarray(f(x)) for x in xs]), rtol=1e-5, atol=1e-6)
  with enable_x64():
    x = rng.standard_normal((5, 6))
    check_grads(lambda x: image.resize(x, (3, 8), "cubic"), (x,), order=1, atol=1e-6,
                rtol=1e-6)


@pytest.mark.slow  # ~20 s: every op of the eager weight computation compiles on its own
def test_second_order_grads_and_grads_in_scale_and_translation():
  rng = np.random.default_rng(1)
  with enable_x64():
    x = rng.standard_normal((5, 6))
    check_grads(lambda x: image.resize(x, (3, 8), "cubic"), (x,), order=2, atol=1e-6,
                rtol=1e-6)
    # Differentiable in the scale and translation too (traced, not static).
    check_grads(lambda s, t: image.scale_and_translate(x, (4, 4), (0, 1), s, t, "linear"),
                (np.array([0.7, 1.2]), np.array([0.2, -0.1])), order=1, atol=1e-6, rtol=1e-6)


def test_bad_input():
  x = np.ones((4, 4), np.float32)
  with pytest.raises(ValueError, match="shape must have length"):
    image.resize(x, (2, 2, 2), "linear")
  with pytest.raises(ValueError, match="Unknown resize method"):
    image.resize(x, (2, 2), "bogus")
  with pytest.raises(ValueError, match="Nearest neighbor"):
    image.scale_and_translate(x, (2, 2), (0,), np.ones(1), np.zeros(1), "nearest")
