"""Error texts of custom_linear_solve, custom_root, map_coordinates and image.resize (JAX's
classes and phrases, which users search for), and resize with an array shape."""
import re

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.scipy import ndimage
from tests.util import assert_close


def test_custom_linear_solve_checks_outputs():
  solve = lambda f, x: x
  with pytest.raises(TypeError, match=re.escape("matvec() output pytree structure must "
                                                "match b")):
    lax.custom_linear_solve(lambda x: [x], 1.0, solve, solve)
  with pytest.raises(TypeError, match=re.escape("solve() output pytree")):
    lax.custom_linear_solve(lambda x: x, 1.0, lambda f, x: [x], solve)
  with pytest.raises(TypeError, match=re.escape("transpose_solve() output pytree")):
    lax.custom_linear_solve(lambda x: x, 1.0, solve, lambda f, x: [x])
  with pytest.raises(ValueError, match=re.escape("solve() output shapes must match b, got "
                                                 "[(2,)] and [()]")):
    lax.custom_linear_solve(lambda x: x, 1.0, lambda f, x: jnp.ones(2), solve)
  with pytest.raises(ValueError, match=re.escape("matvec() output shapes")):
    hlox.jvp(lambda a: lax.custom_linear_solve(lambda x: a * jnp.ones(2), 1.0, solve, solve),
             (1.0,), (1.0,))


def test_custom_linear_solve_grad_needs_transpose_solve():
  a = np.array([[2., 1.], [0., 3.]], np.float32)
  def loss(a, b):
    x = lax.custom_linear_solve(lambda v: a @ v, b, lambda mv, v: jnp.linalg.solve(a, v))
    return jnp.sum(x)
  b = np.array([1., 2.], np.float32)
  assert_close(loss(a, b), np.linalg.solve(a, b).sum(), np.float32)
  with pytest.raises(TypeError, match="transpose_solve required"):
    hlox.grad(loss)(a, b)


def test_custom_root_checks_outputs():
  with pytest.raises(TypeError, match=re.escape("f() output pytree structure must match "
                                                "initial_guess")):
    lax.custom_root(lambda x: (x, x), 0.0, lambda f, x: x, lambda f, x: x)
  with pytest.raises(TypeError, match=re.escape("solve() output pytree")):
    lax.custom_root(lambda x: x, 0.0, lambda f, x: (x, x), lambda f, x: x)
  with pytest.raises(TypeError, match=re.escape("tangent_solve() output pytree")):
    hlox.jvp(lambda x: lax.custom_root(lambda y: x - y, 0.0, lambda f, x: x,
                                       lambda f, x: (x, x)), (0.0,), (0.0,))
  with pytest.raises(ValueError, match="has_aux was set to True"):
    lax.custom_root(lambda x: x, 0.0, lambda f, x: x, lambda f, x: x, has_aux=True)


def test_map_coordinates_unsupported_mode():
  x, c = np.arange(5.0), [np.linspace(0, 5, num=3)]
  with pytest.raises(NotImplementedError, match="does not yet support mode 'grid-wrap'"):
    ndimage.map_coordinates(x, c, order=1, mode="grid-wrap")
  assert_close(ndimage.map_coordinates(x, c, order=1, mode="nearest"), [0., 2.5, 4.],
               np.float32)


def test_resize_shape_must_be_integers():
  x = jnp.ones((3, 4))
  assert hlox.image.resize(x, jnp.array((10, 17)), "nearest").shape == (10, 17)
  assert hlox.image.resize(x, np.array([5, 2]), "linear").shape == (5, 2)
  with pytest.raises(TypeError, match="shape must be a sequence of integers"):
    hlox.image.resize(x, [10.5, 17], "bicubic")
