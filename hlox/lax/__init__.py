"""``hlox.lax``: every primitive, each with all of its rules, and a thin function per
primitive (JAX's ``lax`` API).

Belongs here: a primitive's definition with its abstract evaluation, eager hook, JVP,
transpose, batching rule and lowering (``elementwise``, ``shapes``, ``reductions``, ...), and
call primitives such as ``jit`` (``call.py``) and control flow. May import ``hlox.core``, the
interpreters' rule tables, the runtime's ``Array``/``device_put``, the utilities and jaxlib's
MLIR builders (for lowering rules); never ``numpy``, ``random`` or the public API. Submodules
import each other directly (never this package) and form no circle.
"""
from hlox.lax.elementwise import *  # noqa: F401,F403
from hlox.lax.shapes import *  # noqa: F401,F403
from hlox.lax.reductions import *  # noqa: F401,F403
from hlox.lax.windowed import *  # noqa: F401,F403
from hlox.lax.indexing import *  # noqa: F401,F403
from hlox.lax.dot import *  # noqa: F401,F403
from hlox.lax.sorting import *  # noqa: F401,F403
from hlox.lax.ad_util import *  # noqa: F401,F403
from hlox.lax.parallel import *  # noqa: F401,F403
from hlox.lax import varying as _varying  # noqa: F401  (pvary, psum_invariant, vma rules)
from hlox.lax import call as _call  # noqa: F401  (jit_p and its rules)
from hlox.lax import state as _state  # noqa: F401  (array references: new_ref, get, swap...)
from hlox.lax import ref_view as _ref_view  # noqa: F401  (ref.at[idx] views)
from hlox.lax import call_exported as _call_exported  # noqa: F401  (Exported.call)
from hlox.lax import dim_as_value as _dim_as_value  # noqa: F401  (symbolic sizes as values)
from hlox.lax.control_flow import *  # noqa: F401,F403
from hlox.lax.special import *  # noqa: F401,F403
from hlox.lax.fft import *  # noqa: F401,F403
from hlox.lax import linalg  # noqa: F401
from hlox.lax.convolution import *  # noqa: F401,F403
from hlox.lax.solvers import *  # noqa: F401,F403
from hlox.lax.rng import *  # noqa: F401,F403
from hlox.lax.compiler_hints import *  # noqa: F401,F403
from hlox.lax import xla_metadata as _xla_metadata  # noqa: F401  (XLA metadata primitives)
from hlox.lax import shard_alike as _shard_alike  # noqa: F401  (shard_alike_p)
from hlox.lax import inspect_sharding as _inspect_sharding  # noqa: F401  (inspect_sharding_p)
from hlox.lax import entry_layout as _entry_layout  # noqa: F401  (jit's argument layouts)
from hlox.lax.ragged import *  # noqa: F401,F403
from hlox.lax.scaled_dot import *  # noqa: F401,F403
from hlox.lax.sharding_constraint import *  # noqa: F401,F403
from hlox.lax import checks as _checks  # noqa: F401  (check_p, checkify's automatic checks)
from hlox.lax import taylor as _taylor  # noqa: F401  (jet rules)
from hlox.lax.shard_map import pbroadcast, pcast, pvary, shard_map_p  # noqa: F401

# The structural operations that also take typed key arrays, as JAX's do: each hands a call
# it refused for a key operand to ``core.extended_functions.refused``, which runs the
# implementation ``hlox.random.key_functions`` registers (a test checks the two agree).
ACCEPTING_KEYS = ("broadcast", "broadcast_in_dim", "reshape", "transpose", "expand_dims",
                  "squeeze", "concatenate", "slice", "rev", "index_in_dim",
                  "dynamic_index_in_dim", "slice_in_dim", "dynamic_slice_in_dim",
                  "dynamic_slice", "dynamic_update_slice", "dynamic_update_slice_in_dim",
                  "dynamic_update_index_in_dim")
