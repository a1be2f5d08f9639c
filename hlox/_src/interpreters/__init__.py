"""``jax._src.interpreters``: the interpreter names libraries built on JAX import privately
(see ``hlox/_src/__init__.py``)."""
