"""Test configuration: 8 CPU devices, jaxpr checks on, a compilation cache shared by the
run, hypothesis profile for CI."""
import os

os.environ.setdefault("HLOX_NUM_CPU_DEVICES", "8")
os.environ.setdefault("HLOX_ENABLE_CHECKS", "1")


def _share_compiled_programs():
  """One on-disk compilation cache for the whole test run: the pytest-xdist workers (which
  inherit this process's environment) and the hlox processes that tests start compile each
  program once between them, where each would compile it again. Half of the suite's time is
  XLA compiling small programs, many of them the same; this also runs the persistent cache's
  read path under every test. Removed when the run ends."""
  import atexit
  import shutil
  import tempfile
  if "PYTEST_XDIST_WORKER" in os.environ or "HLOX_COMPILATION_CACHE_DIR" in os.environ:
    return  # a worker (the directory comes from the controller), or a directory given
  directory = tempfile.mkdtemp(prefix="hlox-test-compilation-cache-")
  atexit.register(shutil.rmtree, directory, ignore_errors=True)
  os.environ["HLOX_COMPILATION_CACHE_DIR"] = directory
  os.environ.setdefault("HLOX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")


_share_compiled_programs()

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", max_examples=6, deadline=None, derandomize=True,
                          suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# --- CI samples of large parametrized families ---------------------------------------------
# ``@pytest.mark.ci_sample(n)`` on a parametrized test: the default run (CI) takes about one
# case in n, chosen by a hash of the case's id (fixed from run to run, and spread over every
# parameter of a stacked parametrization, which a plain stride is not); the other cases are
# marked ``slow`` and run with ``-m slow`` (``-m 'slow or not slow'`` runs every case). Used
# where a family's cases are alike and each costs XLA compiles: it keeps the suite inside its
# time budget without dropping any family from CI.
import zlib  # noqa: E402

import pytest  # noqa: E402


@pytest.hookimpl(tryfirst=True)  # before -m deselects on the markers added here
def pytest_collection_modifyitems(config, items):
  families = set()  # the first case of each family always runs
  for item in items:
    mark = item.get_closest_marker("ci_sample")
    if mark is None:
      continue
    family = (item.path, item.cls, getattr(item, "originalname", item.name))
    if family in families and zlib.crc32(item.name.encode()) % int(mark.args[0]):
      item.add_marker(pytest.mark.slow)
    families.add(family)
