"""hlox starts quietly: jaxlib's C++ INFO lines appear only when asked for."""
import os
import subprocess
import sys

import pytest

_PROGRAM = "import hlox.numpy as jnp; print(float(jnp.ones(3).sum()))"


def _run(**env_changes):
  env = {k: v for k, v in os.environ.items()
         if k not in ("TF_CPP_MIN_LOG_LEVEL", "HLOX_LOG_LEVEL")}
  env.update(env_changes)
  out = subprocess.run([sys.executable, "-c", _PROGRAM], capture_output=True, text=True,
                       env=env, timeout=120)
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip() == "3.0"
  return out.stderr


def test_no_cpp_log_lines_by_default():
  assert "pjrt_client.cc" not in _run()


def test_hlox_log_level_info_shows_them():
  assert "pjrt_client.cc" in _run(HLOX_LOG_LEVEL="INFO")


def test_a_users_tf_cpp_min_log_level_is_honoured():
  assert "pjrt_client.cc" in _run(TF_CPP_MIN_LOG_LEVEL="0")


def test_unknown_level_is_a_value_error():
  env = dict(os.environ, HLOX_LOG_LEVEL="LOUD")
  out = subprocess.run([sys.executable, "-c", _PROGRAM], capture_output=True, text=True,
                       env=env, timeout=120)
  assert out.returncode != 0 and "HLOX_LOG_LEVEL" in out.stderr and "ValueError" in out.stderr


if __name__ == "__main__":
  sys.exit(pytest.main([__file__]))
