"""``hlox.version`` builds version strings as ``jax.version`` does: a pinned release
version wins; else ``WHEEL_VERSION_SUFFIX``; for builds ``JAX_RELEASE``/``JAX_NIGHTLY``;
else a dev version from git (or today's date)."""
import datetime
import re
from unittest import mock

import pytest

from hlox import version

# PEP 440 subset JAX checks its own versions against
_VALID = re.compile(r"^[0-9]+(\.[0-9]+){2,3}(?:rc[0-9]+|\.dev[0-9]+)?(?:\+[a-zA-Z0-9_.]+)?$")
_ENV = ("JAX_RELEASE", "JAXLIB_RELEASE", "JAX_NIGHTLY", "JAXLIB_NIGHTLY",
        "WHEEL_VERSION_SUFFIX", "JAX_CUSTOM_VERSION_SUFFIX")


@pytest.fixture
def unpinned(monkeypatch):
  for name in _ENV:
    monkeypatch.delenv(name, raising=False)
  monkeypatch.setattr(version, "_version", "1.2.3")
  monkeypatch.setattr(version, "_release_version", None)
  return monkeypatch


def test_own_version_is_valid_and_consistent():
  assert _VALID.match(version.__version__)
  assert version._get_version_string() == version.__version__
  assert version.__version_info__ == version._version_as_tuple(version.__version__)
  assert version._version_as_tuple("1.2.3.dev20250101+abc") == (1, 2, 3)


def test_release_version_asks_no_git(monkeypatch):
  monkeypatch.setattr(version, "_release_version", "1.2.3.dev4567")
  with mock.patch("subprocess.Popen") as popen:
    assert version._get_version_string() == "1.2.3.dev4567"
    assert version._get_version_for_build() == "1.2.3.dev4567"
  popen.assert_not_called()


def test_checkout_version_from_git(unpinned):
  with mock.patch("subprocess.Popen") as popen:
    popen.return_value.communicate.return_value = (b"1731433958-1c0f1076e", b"")
    got = version._get_version_string()
  day = datetime.date.fromtimestamp(1731433958).strftime("%Y%m%d")
  assert got == f"1.2.3.dev{day}+1c0f1076e" and _VALID.match(got)
  unpinned.setenv("JAX_CUSTOM_VERSION_SUFFIX", "test")
  with mock.patch("subprocess.Popen") as popen:
    popen.return_value.communicate.return_value = (b"1731433958-1c0f1076e", b"")
    assert version._get_version_for_build() == f"1.2.3.dev{day}+1c0f1076e.test"


def test_without_git_falls_back_to_today(unpinned):
  today = datetime.date.today().strftime("%Y%m%d")
  with mock.patch("subprocess.Popen") as popen:
    popen.return_value.communicate.return_value = (None, b"")
    assert version._get_version_string() == f"1.2.3.dev{today}"
  popen.return_value.communicate.assert_called()


@pytest.mark.parametrize("env, expected, rc", [
    ({"JAX_NIGHTLY": "1"}, "1.2.3.dev{today}", False),
    ({"JAXLIB_NIGHTLY": "1"}, "1.2.3.dev{today}", False),
    ({"JAX_RELEASE": "1"}, "1.2.3", False),
    ({"JAXLIB_RELEASE": "1"}, "1.2.3", False),
    ({"JAXLIB_NIGHTLY": "1", "WHEEL_VERSION_SUFFIX": ".dev20250101+1c0f1076erc1"},
     "1.2.3.dev20250101+1c0f1076erc1", False),
    ({"JAX_RELEASE": "1", "WHEEL_VERSION_SUFFIX": "rc0"}, "1.2.3rc0", True),
])
def test_build_version_from_environment(unpinned, env, expected, rc):
  for k, v in env.items():
    unpinned.setenv(k, v)
  with mock.patch("subprocess.Popen") as popen:
    got = version._get_version_for_build()
  popen.assert_not_called()
  assert got == expected.format(today=datetime.date.today().strftime("%Y%m%d"))
  assert _VALID.match(got) and version._is_prerelease() is rc
