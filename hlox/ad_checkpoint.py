"""``jax.ad_checkpoint``: ``checkpoint`` (``remat``), its policies and ``checkpoint_name``."""
from hlox.checkpoint import (Offloadable, Recompute, Saveable, checkpoint, checkpoint_name,
                             checkpoint_policies, name_p, remat)

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "remat", "name_p",
           "Saveable", "Recompute", "Offloadable"]
