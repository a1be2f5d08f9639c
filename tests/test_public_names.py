"""hlox's modules offer every public name JAX's do (the names recorded from JAX in
``tests/jax_public_names.py``, so this runs without JAX), except a short list of exclusions,
each with its reason. An exclusion that hlox has since gained fails the test too, so the list
only shrinks."""
import importlib

import pytest

from tests.jax_public_names import JAX_VERSION, PUBLIC_NAMES

# module -> {name: why hlox does not have it}
_SHARDING = "sharded arrays and shard_map (issue 19: sharding) are not built yet"
EXCLUDED = {
    "hlox.debug": {
        "DebugEffect": ("hlox's callbacks carry an ordered flag, not effect objects: jaxprs "
                        "have no effect sets to put them in"),
        "OrderedDebugEffect": "as DebugEffect",
        "breakpoint": "an interactive debugger inside traced programs: not built",
        "inspect_array_sharding": ("its callback needs the sharding XLA chooses while "
                                   "compiling, which hlox's lowering cannot see yet"),
    },
    "hlox.custom_derivatives": {
        "linear_call": "a linear function with a user transpose: not built yet",
        "remat_opt_p": ("hlox runs an optimize_remat custom_vjp's fwd as usual (same values and "
                        "gradients), so it has no primitive of that name"),
    },
    "hlox.lax": {
        "device_put_p": _SHARDING,
        "precv": _SHARDING, "psend": _SHARDING, "ragged_all_to_all": _SHARDING,
        "ragged_all_to_all_p": _SHARDING,
        "select_and_scatter_p": ("hlox's max-pooling gradient uses select_and_scatter_add_p "
                                 "(exported); JAX's general form with user select/scatter "
                                 "functions has no user in hlox"),
    },
}


@pytest.mark.parametrize("module", sorted(PUBLIC_NAMES))
def test_module_has_jax_public_names(module):
  mod = importlib.import_module(module)
  have = set(dir(mod))
  excluded = EXCLUDED.get(module, {})
  missing = sorted(n for n in PUBLIC_NAMES[module] if n not in have and n not in excluded)
  assert not missing, (f"{module} lacks {len(missing)} public names of JAX {JAX_VERSION}'s "
                       f"module: {missing}")
  regained = sorted(n for n in excluded if n in have)
  assert not regained, f"{module} now has {regained}: remove them from EXCLUDED"


def test_exclusions_name_real_jax_names():
  for module, names in EXCLUDED.items():
    assert module in PUBLIC_NAMES, module
    unknown = set(names) - set(PUBLIC_NAMES[module])
    assert not unknown, (module, unknown)
    assert all(reason.strip() for reason in names.values()), module
