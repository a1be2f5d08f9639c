"""Keeps jaxlib's coordination agent from aborting the process when another process dies.

When the coordination service reports an error (the coordinator went away, or a process
stopped sending heartbeats), jaxlib 0.10.2's agent calls the ``missed_heartbeat_callback``
on one of its own C++ threads. The binding cannot convert the error status into a Python
object, so the call throws ``std::bad_cast`` there, which no C++ frame catches: the C++
runtime calls ``std::terminate`` and the process dies of SIGABRT (with no callback, jaxlib
aborts on purpose). See docs/RUNTIME_NOTES.md.

``install`` puts a ``std::terminate`` handler in front of the C++ runtime's (with ctypes,
through the C++ ABI's ``std::set_terminate``). It takes over only a ``std::bad_cast`` while
``is_ours()`` says a coordination client is live: it reports the failure through
``on_failure`` and parks that jaxlib thread for good (a terminate handler may not return),
so the rest of the process lives on and its Python code sees an exception instead. Any
other terminate goes to the previous handler, which aborts as before. The parked thread
keeps the agent's locks: the caller must never use that coordination client again.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import time

_BAD_CAST = b"St8bad_cast"  # the Itanium C++ ABI name of std::bad_cast's type

_TerminateHandler = ctypes.CFUNCTYPE(None)
_installed = None      # the ctypes callback; kept alive while it is the handler
_previous = None       # the handler it replaced (the C++ runtime's: prints, then aborts)
_is_ours = None
_on_failure = None
_current_exception_type = None


def _cxx_runtime():
  """The C++ runtime library jaxlib is linked with (libstdc++ on Linux, libc++abi on macOS),
  or None. Opened by name, so it is the copy already loaded in this process."""
  def names():
    yield from ("libstdc++.so.6", "libc++abi.dylib")
    yield from (ctypes.util.find_library(n) for n in ("stdc++", "c++abi"))  # slower: last
  for path in names():
    if path is None:
      continue
    try:
      lib = ctypes.CDLL(path)
      lib._ZSt13set_terminatePFvvE  # noqa: B018 -- std::set_terminate(void (*)())
      lib.__cxa_current_exception_type  # noqa: B018
    except (OSError, AttributeError):
      continue
    return lib
  return None


def _exception_type_name():
  """The mangled type name of the exception being handled, or None."""
  info = _current_exception_type()
  if not info:
    return None
  # std::type_info is {vtable pointer, const char* name} in the Itanium ABI.
  return ctypes.c_char_p.from_address(info + ctypes.sizeof(ctypes.c_void_p)).value


def _handler():
  try:
    ours = _exception_type_name() == _BAD_CAST and _is_ours()
  except BaseException:  # noqa: BLE001 -- never decide to swallow on an error
    ours = False
  if not ours:
    if _previous:
      _TerminateHandler(_previous)()
    os.abort()
  try:
    _on_failure()
  except BaseException:  # noqa: BLE001 -- nothing may escape a terminate handler
    pass
  while True:  # park this jaxlib thread; sleeping lets the other threads have the GIL
    time.sleep(3600)


def install(is_ours, on_failure) -> bool:
  """Installs the handler (once per process); returns False where the C++ runtime's
  ``std::set_terminate`` cannot be reached, and jaxlib keeps aborting the process.

  ``is_ours()`` says whether a ``std::bad_cast`` reaching ``std::terminate`` now is the
  coordination agent's; ``on_failure()`` records it. Both run on the failing jaxlib
  thread with the GIL held and must not block.
  """
  global _installed, _previous, _is_ours, _on_failure, _current_exception_type
  _is_ours, _on_failure = is_ours, on_failure
  if _installed is not None:
    return True
  lib = _cxx_runtime()
  if lib is None:
    return False
  set_terminate = lib._ZSt13set_terminatePFvvE
  set_terminate.restype = ctypes.c_void_p
  set_terminate.argtypes = [_TerminateHandler]
  _current_exception_type = lib.__cxa_current_exception_type
  _current_exception_type.restype = ctypes.c_void_p
  _current_exception_type.argtypes = []
  handler = _TerminateHandler(_handler)
  _previous = set_terminate(handler)
  _installed = handler
  return True
