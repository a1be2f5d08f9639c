"""``hlox.lax``: every primitive, with a thin function per primitive (JAX's ``lax`` API)."""
from hlox.lax.elementwise import *  # noqa: F401,F403
from hlox.lax.shapes import *  # noqa: F401,F403
from hlox.lax.reductions import *  # noqa: F401,F403
from hlox.lax.windowed import *  # noqa: F401,F403
from hlox.lax.indexing import *  # noqa: F401,F403
from hlox.lax.dot import *  # noqa: F401,F403
from hlox.lax.sorting import *  # noqa: F401,F403
from hlox.lax.ad_util import *  # noqa: F401,F403
from hlox.lax.parallel import *  # noqa: F401,F403
from hlox.lax import call as _call  # noqa: F401  (jit_p and its rules)
from hlox.lax.control_flow import *  # noqa: F401,F403
from hlox.lax.special import *  # noqa: F401,F403
from hlox.lax import linalg  # noqa: F401
