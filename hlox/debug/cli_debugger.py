"""The command-line debugger of ``hlox.debug.breakpoint`` (backend ``"cli"``): a ``cmd``
loop with the prompt ``(jdb)`` over the captured frames, with pdb's core commands:

``p expr`` / ``pp expr`` (print / pretty-print; a bare expression also prints), ``u(p)`` and
``d(own)`` (move between frames), ``l(ist)`` (the source around the current line),
``w(here)`` / ``bt`` (the stack), ``c(ont(inue))`` (resume the program) and ``q(uit)`` /
``exit`` / end of input (exit the process, as pdb does).
"""
from __future__ import annotations

import cmd
import pprint
import sys
import traceback

from hlox.debug import debugger as debugger_core

__all__ = ["CliDebugger", "run_debugger"]


class CliDebugger(cmd.Cmd):
  """A text debugger over a list of ``DebuggerFrame`` (the innermost first)."""

  prompt = "(jdb) "

  def __init__(self, frames, thread_id, stdin=None, stdout=None, completekey="tab"):
    super().__init__(completekey=completekey, stdin=stdin, stdout=stdout)
    self.use_rawinput = stdin is None  # a given stream is read as it is (tests, pipes)
    self.frames = frames
    self.frame_index = 0
    self.thread_id = thread_id
    self.intro = "Entering jdb:"

  def current_frame(self):
    return self.frames[self.frame_index]

  def evaluate(self, expression):
    frame = self.current_frame()
    return eval(expression, {}, {**frame.globals, **frame.locals})  # noqa: S307

  def _print(self, text):
    print(text, file=self.stdout)

  def _print_error(self):
    kind, value = sys.exc_info()[:2]
    self._print("*** " + traceback.format_exception_only(kind, value)[-1].strip())

  def _show(self, expression, formatter):
    try:
      self._print(formatter(self.evaluate(expression)))
    except Exception:  # noqa: BLE001 (any error of the user's expression is reported)
      self._print_error()

  def default(self, line):
    """Evaluate an expression and print its value."""
    self._show(line, repr)

  def emptyline(self):
    return False  # an empty line does nothing (``cmd`` would repeat the last command)

  def do_p(self, arg):
    """p expression: evaluate and print the value of an expression."""
    self._show(arg, repr)

  def do_pp(self, arg):
    """pp expression: evaluate and pretty-print the value of an expression."""
    self._show(arg, pprint.pformat)

  def do_up(self, arg):
    """u(p): move up a stack frame (to its caller)."""
    if self.frame_index == len(self.frames) - 1:
      self._print("At topmost frame.")
    else:
      self.frame_index += 1
    self.print_context()
  do_u = do_up

  def do_down(self, arg):
    """d(own): move down a stack frame."""
    if self.frame_index == 0:
      self._print("At bottommost frame.")
    else:
      self.frame_index -= 1
    self.print_context()
  do_d = do_down

  def do_list(self, arg):
    """l(ist): show the source around the current line."""
    self.print_context(num_lines=5)
  do_l = do_list

  def do_continue(self, arg):
    """c(ont(inue)): leave the debugger and let the program go on."""
    return True
  do_c = do_cont = do_continue

  def do_quit(self, arg):
    """q(uit), exit: stop the program (the process exits)."""
    sys.exit(0)
  do_q = do_EOF = do_exit = do_quit

  def do_where(self, arg):
    """w(here), bt: print the stack, the most recent frame last."""
    self.print_backtrace()
  do_w = do_bt = do_where

  def print_context(self, num_lines=2):
    frame = self.current_frame()
    lines = [f"> {frame.filename}({frame.lineno})"]
    if frame.offset is not None:
      first, last = frame.offset - 1 - num_lines, frame.offset + num_lines
      for i, line in enumerate(frame.source):
        if first <= i <= last:
          lines.append(("->  " if i == frame.offset else "    ") + line)
    self._print("\n".join(lines))

  def print_backtrace(self):
    lines = ["Traceback:"]
    for frame in reversed(self.frames):
      lines.append(f'  File "{frame.filename}", line {frame.lineno}')
      lines.append("    <no source>" if frame.offset is None
                   else "    " + frame.source[frame.offset].strip())
    self._print("\n".join(lines))

  def run(self):
    while True:
      try:
        self.cmdloop()
        return
      except KeyboardInterrupt:
        self._print("--KeyboardInterrupt--")


def run_debugger(frames, thread_id, **kwargs):
  CliDebugger(frames, thread_id, **kwargs).run()


debugger_core.register_debugger("cli", run_debugger, -1)
