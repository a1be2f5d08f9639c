"""``jax._src.dispatch``: equinox's ``filter_jit`` waits for the runtime tokens of ordered
effects (``wait_for_tokens``) so that callbacks' errors surface before it returns."""
from hlox.debug.callbacks import effects_barrier

__all__ = ["wait_for_tokens"]

# Blocks until every ordered effect (host callback) issued so far has run.
wait_for_tokens = effects_barrier
