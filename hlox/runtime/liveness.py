"""Notices at once that a process of a multi-process run died, not a heartbeat timeout later.

jaxlib's coordination service learns that a process other than the coordinator died only from
its missing heartbeats (``heartbeat_timeout_seconds``). A killed or crashed process closes
its sockets, though: every process keeps one TCP connection to process 0 here, process 0
sees a connection close without the ``bye`` that ``shutdown`` sends first, and tells the
others. A stopped or frozen process closes nothing: the heartbeats still catch that.

All of it runs on one daemon thread per process; any failure to set it up (a firewall
between the hosts, say) only leaves the heartbeats in charge. Process 0 listens on an
ephemeral port of the coordinator's interfaces and publishes it in the coordination
service's key-value store.
"""
from __future__ import annotations

import selectors
import socket
import threading

_KEY = "hlox/liveness_port"
_SETUP_TIMEOUT_S = 10


class Watch:
  """This process's end of the liveness connections; ``on_lost(k, text)`` is called (on the
  watch thread) when process ``k`` died."""

  def __init__(self, process_id, num_processes, coordinator_host, on_lost, bind_host=""):
    self.process_id = process_id
    self.num_processes = num_processes
    self.host = coordinator_host
    self.bind_host = bind_host  # process 0 listens there ("" or "::": every interface)
    self.on_lost = on_lost
    self.leaving = False
    self.lock = threading.Lock()
    self.peers = {}  # process id -> socket (process 0); {0: socket} elsewhere

  def start(self, client):
    """Sets up (in the background) after ``client`` joined the run."""
    if self.process_id == 0:
      listener = _listen(self.bind_host)
      client.key_value_set(_KEY, str(listener.getsockname()[1]))
      target = lambda: self._serve(listener)  # noqa: E731
    else:
      target = lambda: self._follow(client)  # noqa: E731
    threading.Thread(target=target, name="hlox-distributed-liveness", daemon=True).start()

  def leave(self):
    """Says ``bye`` to the other end(s): the closes that follow are not deaths."""
    with self.lock:
      self.leaving = True
      peers = list(self.peers.values())
    for s in peers:
      try:
        s.sendall(b"bye\n")
      except OSError:
        pass

  # --- process 0 ---
  def _serve(self, listener):
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    said_bye = set()
    names = {}
    while True:
      for key, _ in selector.select():
        s = key.fileobj
        if s is listener:
          conn, _ = listener.accept()
          selector.register(conn, selectors.EVENT_READ)
          continue
        try:
          data = s.recv(64)
        except OSError:
          data = b""
        if data:
          for line in data.split(b"\n"):
            if line.isdigit() and 0 < int(line) < self.num_processes and s not in names:
              names[s] = int(line)
              with self.lock:
                self.peers[int(line)] = s
            elif line == b"bye":
              said_bye.add(s)
          continue
        selector.unregister(s)
        s.close()
        k = names.get(s)
        with self.lock:
          self.peers.pop(k, None)
          leaving = self.leaving
        if k is None or s in said_bye or leaving:
          continue
        self._tell_others(k)
        self.on_lost(k, f"process {k}'s connection to process 0 closed without a shutdown")

  def _tell_others(self, k):
    with self.lock:
      peers = list(self.peers.values())
    for s in peers:
      try:
        s.sendall(b"lost %d\n" % k)
      except OSError:
        pass

  # --- every other process ---
  def _follow(self, client):
    try:
      port = int(client.blocking_key_value_get(_KEY, _SETUP_TIMEOUT_S * 1000))
      s = socket.create_connection((self.host, port), timeout=_SETUP_TIMEOUT_S)
      s.settimeout(None)
      s.sendall(b"%d\n" % self.process_id)
    except Exception:  # noqa: BLE001 -- no liveness connection: the heartbeats still work
      return
    with self.lock:
      self.peers[0] = s
    buffered = b""
    while True:
      try:
        data = s.recv(64)
      except OSError:
        data = b""
      if not data:
        return  # process 0 gone: its coordination service reports that at once
      buffered += data
      *lines, buffered = buffered.split(b"\n")
      for line in lines:
        if line.startswith(b"lost "):
          k = int(line[5:])
          self.on_lost(k, f"process {k}'s connection to process 0 closed without a shutdown")


def _listen(host):
  if host in ("", "::", "0.0.0.0"):
    if socket.has_dualstack_ipv6():
      return socket.create_server(("", 0), family=socket.AF_INET6, dualstack_ipv6=True)
    return socket.create_server(("", 0))
  family = socket.AF_INET6 if ":" in host else socket.AF_INET
  return socket.create_server((host, 0), family=family)
