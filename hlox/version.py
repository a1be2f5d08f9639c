"""hlox's version (JAX's ``jax.version`` module: ``__version__``, ``_version`` and
``__version_info__``, and the helpers that build a version string for a release, a nightly or
a checkout); the package re-exports ``hlox.__version__`` from here.

``__version__`` is the version of JAX whose API hlox implements: programs and libraries
written for JAX gate features on ``jax.__version_info__`` (flax picks its tracing and scan
code paths by it, optax and equinox theirs), and with ``jax`` aliased to hlox they must see
the API they are actually talking to. The distribution's own version is ``hlox_version``.

Only the standard library is used: build tooling may evaluate this file on its own.
"""

from __future__ import annotations

import datetime
import os
import subprocess

_version = "0.10.2"

# hlox ships as a release: this pins the version string so that importing never asks git.
# A checkout that wants a ``.devDATE+HASH`` version sets it to None.
_release_version: str | None = "0.10.2"

hlox_version = "0.1.0"  # the hlox package's own release (pyproject.toml)

# The commit a build was made from, when the build records it.
_git_hash: str | None = None


def _dev_version_of_today(base: str) -> str:
  """``base`` as a nightly: ``1.2.3.dev20250101`` with today's date."""
  return f"{base}.dev{datetime.date.today():%Y%m%d}"


def _dev_version_from_git(base: str) -> str | None:
  """``base.devDATE+HASH`` from the newest commit of the checkout this file sits in (plus
  ``.SUFFIX`` when ``JAX_CUSTOM_VERSION_SUFFIX`` is set); None when git cannot tell."""
  here = os.path.dirname(os.path.realpath(__file__))
  try:
    proc = subprocess.Popen(["git", "show", "-s", "--format=%at-%h", "HEAD"], cwd=here,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, _ = proc.communicate()
    stamp, commit = out.decode().strip().split("-", 1)
    date = datetime.date.fromtimestamp(int(stamp)).strftime("%Y%m%d")
  except Exception:  # no git, not a checkout, or output we cannot read: no git version
    return None
  if not (date.isnumeric() and commit.isalnum()):
    return None
  version = f"{base}.dev{date}+{commit}"
  suffix = os.environ.get("JAX_CUSTOM_VERSION_SUFFIX")
  return f"{version}.{suffix}" if suffix else version


def _get_version_string() -> str:
  """The version of this installation: the pinned release version if there is one, else the
  base version plus ``WHEEL_VERSION_SUFFIX`` if that is set, else a dev version from git (or
  from today's date when git cannot tell)."""
  if _release_version is not None:
    return _release_version
  wheel_suffix = os.getenv("WHEEL_VERSION_SUFFIX")
  if wheel_suffix:
    return _version + wheel_suffix
  return _dev_version_from_git(_version) or _dev_version_of_today(_version)


def _get_version_for_build() -> str:
  """The version a build should stamp: like :func:`_get_version_string`, except that
  ``JAX_RELEASE``/``JAXLIB_RELEASE`` ask for the plain base version and
  ``JAX_NIGHTLY``/``JAXLIB_NIGHTLY`` for a dated nightly, neither of which asks git."""
  if _release_version is not None:
    return _release_version
  wheel_suffix = os.getenv("WHEEL_VERSION_SUFFIX")
  if wheel_suffix:
    return _version + wheel_suffix
  if os.getenv("JAX_RELEASE") or os.getenv("JAXLIB_RELEASE"):
    return _version
  if os.getenv("JAX_NIGHTLY") or os.getenv("JAXLIB_NIGHTLY"):
    return _dev_version_of_today(_version)
  return _dev_version_from_git(_version) or _dev_version_of_today(_version)


def _is_prerelease() -> bool:
  """Whether the build is a release candidate (``WHEEL_VERSION_SUFFIX`` starting ``rc``)."""
  return os.getenv("WHEEL_VERSION_SUFFIX", "").startswith("rc")


def _version_as_tuple(version: str) -> tuple[int, ...]:
  """The all-digit dot-separated parts of ``version`` as ints (``"1.2.3.dev4"`` -> (1, 2, 3))."""
  return tuple(int(part) for part in version.split(".") if part.isdigit())


__version__ = _get_version_string()
__version_info__ = _version_as_tuple(__version__)
