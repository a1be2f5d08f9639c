"""hlox's modules offer every public name JAX's do (the names recorded from JAX in
``tests/jax_public_names.py``, so this runs without JAX), except a short list of exclusions,
each with its reason. An exclusion that hlox has since gained fails the test too, so the list
only shrinks."""
import importlib

import pytest

from tests.jax_public_names import JAX_VERSION, PUBLIC_NAMES

# module -> {name: why hlox does not have it}
_SHARDING = ("point-to-point (psend/precv), ragged all-to-all and device_put as a primitive: "
             "not built")
# JAX's example libraries and ode module leak their own imports into dir(): JAX itself, its
# private modules and helpers (safe_map as ``map``), none of them part of what they offer.
_JAX_IMPORT = "an import of JAX's module (JAX or its internals), not part of its API"
_JAX_IMPORTS = {name: _JAX_IMPORT
                for name in ("jax", "map", "zip", "safe_map", "safe_zip", "unzip2")}
EXCLUDED = {
    "hlox.debug": {
        "DebugEffect": ("hlox's callbacks carry an ordered flag, not effect objects: jaxprs "
                        "have no effect sets to put them in"),
        "OrderedDebugEffect": "as DebugEffect",
    },
    "hlox.experimental.jet": {
        "jet_fun": ("a transformation of JAX's linear_util (wrapped functions with stores); "
                    "hlox's flat entry point is hlox.interpreters.jet.jet_flat"),
        "jet_subtrace": "as jet_fun",
        "traceable": "as jet_fun",
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
    "hlox.example_libraries.optimizers": _JAX_IMPORTS,
    "hlox.tools.jax_to_ir": {
        "jax": _JAX_IMPORT,
        "app": "absl's app, which JAX's command line runs on; hlox's main uses argparse",
        "flags": "absl's flags, as app",
        "set_up_flags": "defines absl flags, as app",
        "literal_eval": "an import of ast's function, not part of the tool's API",
        "jax2tf": "JAX's TensorFlow bridge, which hlox does not have (jax_to_tf says so)",
        "tf": "TensorFlow, imported when installed: not part of the tool's API",
        "tf_wrap_with_input_names": "a TensorFlow helper of jax_to_tf, as jax2tf",
    },
    "hlox.experimental.source_mapper": {"jax": _JAX_IMPORT},
    "hlox.experimental.ode": {
        **{k: v for k, v in _JAX_IMPORTS.items() if k != "unzip2"},
        "api_util": _JAX_IMPORT, "core": _JAX_IMPORT, "lu": _JAX_IMPORT,
        "ravel_first_arg_": ("JAX's linear_util transformation behind ravel_first_arg "
                             "(which hlox has); hlox has no linear_util"),
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
