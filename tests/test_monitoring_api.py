"""``hlox.monitoring``'s JAX API: the four kinds of listeners, and JAX's event names for
tracing, lowering and compiling."""
from __future__ import annotations

import numpy as np
import pytest

import hlox
from hlox import monitoring


@pytest.fixture
def listeners():
  """Lists of what each kind of listener saw; every listener removed afterwards."""
  seen = {"event": [], "duration": [], "span": [], "scalar": []}
  fns = {
      "event": lambda e, **kw: seen["event"].append((e, kw)),
      "duration": lambda e, d, **kw: seen["duration"].append((e, d, kw)),
      "span": lambda e, s, t, **kw: seen["span"].append((e, s, t, kw)),
      "scalar": lambda e, v, **kw: seen["scalar"].append((e, v, kw)),
  }
  monitoring.register_event_listener(fns["event"])
  monitoring.register_event_duration_secs_listener(fns["duration"])
  monitoring.register_event_time_span_listener(fns["span"])
  monitoring.register_scalar_listener(fns["scalar"])
  yield seen
  monitoring.unregister_event_listener(fns["event"])
  monitoring.unregister_event_duration_listener(fns["duration"])
  monitoring.unregister_event_time_span_listener(fns["span"])
  monitoring.unregister_scalar_listener(fns["scalar"])


def test_records_reach_their_listeners(listeners):
  monitoring.record_event("a", x=1)
  monitoring.record_event("a")
  monitoring.record_event_duration_secs("b", 2.5, fun_name="f")
  monitoring.record_event_time_span("c", 1.0, 3.0)
  monitoring.record_scalar("d", 7)
  assert listeners["event"] == [("a", {"x": 1}), ("a", {})]
  assert listeners["duration"] == [("b", 2.5, {"fun_name": "f"})]
  assert listeners["span"] == [("c", 1.0, 3.0, {})]
  assert listeners["scalar"] == [("d", 7, {})]
  assert monitoring.count("a") >= 2  # JAX's records count as hlox's events do


def test_a_one_argument_listener_sees_only_public_events():
  # JAX's listeners may take the event alone (``events.append``): hlox's own events (with
  # keywords) must not reach them.
  events = []
  monitoring.register_event_listener(events.append)
  try:
    hlox.jit(lambda x: x * 3 - 2)(np.arange(3.0, dtype=np.float32))
    monitoring.record_event("mine")
  finally:
    monitoring.unregister_event_listener(events.append)
  assert events[-1] == "mine"
  assert all(e.startswith("/jax/") for e in events[:-1])


def test_unregister_and_copies():
  cb = lambda e, d, **kw: None
  before = monitoring.get_event_duration_listeners()
  monitoring.register_event_duration_secs_listener(cb)
  assert cb in monitoring.get_event_duration_listeners() and cb not in before
  monitoring.get_event_duration_listeners().append(print)  # a copy: no effect
  assert print not in monitoring.get_event_duration_listeners()
  monitoring.unregister_event_duration_listener(cb)
  assert monitoring.get_event_duration_listeners() == before
  with pytest.raises(AssertionError):
    monitoring.unregister_event_duration_listener(cb)
  with pytest.raises(AssertionError):
    monitoring.unregister_event_listener(cb)


def test_clear_event_listeners_removes_every_kind():
  saved = (monitoring.get_event_listeners(), monitoring.get_event_duration_listeners(),
           monitoring.get_event_time_span_listeners(), monitoring.get_scalar_listeners())
  try:
    monitoring.register_event_listener(lambda e: None)
    monitoring.register_scalar_listener(lambda e, v: None)
    monitoring.clear_event_listeners()
    assert not any((monitoring.get_event_listeners(), monitoring.get_event_duration_listeners(),
                    monitoring.get_event_time_span_listeners(),
                    monitoring.get_scalar_listeners()))
  finally:
    for register, fns in zip((monitoring.register_event_listener,
                              monitoring.register_event_duration_secs_listener,
                              monitoring.register_event_time_span_listener,
                              monitoring.register_scalar_listener), saved):
      for fn in fns:
        register(fn)


def test_compile_stages_record_jax_durations(listeners):
  def fresh(x):
    return x * 5.0 + 3.0

  hlox.jit(fresh)(np.float32(2.0))
  names = [e for e, _, _ in listeners["duration"]]
  for event in (monitoring.TRACE_EVENT, monitoring.LOWER_EVENT,
                monitoring.BACKEND_COMPILE_EVENT):
    assert event in names, (event, names)
  assert monitoring.TRACE_EVENT == "/jax/core/compile/jaxpr_trace_duration"
  trace = [(d, kw) for e, d, kw in listeners["duration"] if e == monitoring.TRACE_EVENT]
  assert trace[0][0] >= 0 and trace[0][1] == {"fun_name": "fresh"}
  compile_ = [kw for e, _, kw in listeners["duration"] if e == monitoring.BACKEND_COMPILE_EVENT]
  assert compile_[-1] == {"fun_name": "jit(fresh)"}
  # each duration comes with a start-time scalar and a time span, as in JAX
  spans = [(s, t) for e, s, t, _ in listeners["span"] if e == monitoring.TRACE_EVENT]
  assert spans and spans[0][1] >= spans[0][0]
  assert any(e == monitoring.TRACE_EVENT for e, _, _ in listeners["scalar"])
