"""Linear algebra on dtypes LAPACK has no routines for (float16, bfloat16) raises an error
naming the operation that is both newer JAX's TypeError and JAX 0.10.2's
NotImplementedError ("Unsupported dtype float16")."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
import hlox.scipy as jsp
from hlox.errors import UnsupportedDtypeError

_X = np.eye(3, dtype=np.float16) * 2


@pytest.mark.parametrize("name, fn", [
    ("cholesky", jnp.linalg.cholesky), ("eigh", jnp.linalg.eigh), ("svd", jnp.linalg.svd),
    ("eig", jnp.linalg.eig), ("lu", jsp.linalg.inv), ("lu", lambda a: jnp.linalg.solve(a, a)),
    ("geqrf", jnp.linalg.qr),
])
def test_float16_raises_type_and_not_implemented_error(name, fn):
  x = jnp.asarray(_X)
  with pytest.raises(TypeError, match=f"{name} does not accept dtype float16"):
    hlox.block_until_ready(fn(x))
  with pytest.raises(NotImplementedError, match="Unsupported dtype float16"):
    hlox.block_until_ready(fn(x))


def test_bfloat16_and_error_class():
  assert issubclass(UnsupportedDtypeError, TypeError)
  assert issubclass(UnsupportedDtypeError, NotImplementedError)
  with pytest.raises(UnsupportedDtypeError, match="lu does not accept dtype bfloat16"):
    jnp.linalg.inv(jnp.asarray(_X).astype(jnp.bfloat16))


def test_supported_dtypes_unaffected():
  np.testing.assert_allclose(jnp.linalg.inv(_X.astype(np.float32)), np.eye(3) / 2, rtol=1e-6)
  np.testing.assert_allclose(jnp.linalg.det(jnp.asarray(_X)).astype(np.float32), 8.0)
