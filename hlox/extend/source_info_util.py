"""``jax.extend.source_info_util``: where the operations of a traced program come from.
flax registers its files with ``register_exclusion`` so that source locations point at the
user's line, not at flax (filtered tracebacks it arranges through
``jax._src.traceback_util``); the other names are hlox's own source
information (``hlox.core.source_info``)."""
from hlox.core.source_info import (NameStack, SourceInfo, current, extend_name_stack,
                                   register_exclusion, reset_name_stack,
                                   transform_name_stack)

__all__ = ["NameStack", "SourceInfo", "current", "extend_name_stack", "register_exclusion",
           "reset_name_stack", "transform_name_stack"]
