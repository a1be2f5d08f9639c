"""``hlox.experimental.key_reuse``: detecting PRNG keys that are used more than once.

Turn the checks on with ``hlox.config.update('jax_debug_key_reuse', True)`` (or the
``hlox.debug_key_reuse(True)`` context): a jitted function that consumes one key twice, or
a key passed again to a random function after it consumed it, raises
``hlox.errors.KeyReuseError``. ``_core.check_key_reuse(fun, *args)`` checks one function
statically, whatever the option says.

Belongs here: the public face of the checker (``_core``); the analysis is
``hlox.interpreters.key_reuse``, the rules ``hlox.random.key_reuse``.
"""
