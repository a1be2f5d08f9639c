"""Regenerate tests/jax_public_names.py from an installed JAX: ``python tests/gen_jax_public_names.py > tests/jax_public_names.py`` (when the reference JAX version changes)."""
import importlib, pkgutil, pprint, sys
import jax, jax.scipy.stats, jax.experimental.compilation_cache.compilation_cache
mods = ["jax.numpy", "jax.numpy.linalg", "jax.numpy.fft", "jax.lax", "jax.lax.linalg",
        "jax.scipy.linalg", "jax.scipy.special", "jax.scipy.stats", "jax.scipy.signal",
        "jax.scipy.optimize", "jax.scipy.integrate", "jax.scipy.ndimage", "jax.scipy.cluster.vq",
        "jax.scipy.fft", "jax.scipy.interpolate", "jax.scipy.spatial.transform",
        "jax.scipy.sparse.linalg", "jax.nn", "jax.nn.initializers", "jax.random", "jax.tree_util",
        "jax.tree", "jax.image", "jax.flatten_util", "jax.dtypes", "jax.test_util", "jax.typing",
        "jax.custom_batching", "jax.stages", "jax.monitoring", "jax.errors", "jax.debug",
        "jax.sharding", "jax.core", "jax.experimental.compilation_cache.compilation_cache",
        "jax.example_libraries", "jax.example_libraries.stax",
        "jax.example_libraries.optimizers", "jax.experimental.ode", "jax.export",
        "jax.experimental.checkify", "jax.experimental.random", "jax.ffi"]
# jax.experimental.jet's dir() lists its many imports of JAX internals: its entry in
# jax_public_names.py is kept by hand (the names it defines); so is jax.experimental.pjit's
# (its one name, pjit, hides behind a deprecation __getattr__).
stats = [f"jax.scipy.stats.{n}" for n in dir(jax.scipy.stats)
         if not n.startswith("_") and type(getattr(jax.scipy.stats, n)).__name__ == "module"]
out = {}
for m in mods + sorted(stats):
  mod = importlib.import_module(m)
  out[m.replace("jax", "hlox", 1)] = sorted(n for n in dir(mod) if not n.startswith("_"))
print('"""The public names of JAX %s\'s modules, as ``dir()`` lists them (generated from an installed\nJAX; regenerate when the reference version changes). Used by tests/test_public_names.py."""\n' % jax.__version__)
print("JAX_VERSION = %r\n" % jax.__version__)
print("PUBLIC_NAMES = {")
for k, v in out.items():
  print(f"    {k!r}: (")
  line = "       "
  for n in v:
    item = f" {n!r},"
    if len(line) + len(item) > 99:
      print(line); line = "       "
    line += item
  print(line)
  print("    ),")
print("}")
