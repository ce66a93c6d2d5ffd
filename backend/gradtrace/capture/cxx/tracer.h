// gradtrace capture core: the C line tracer.
// (one translation unit: ``_native.cpp`` includes every part in order)
#pragma once
#include "prelude.h"

namespace gradtrace {

// ------------------------------------------------------------------------- the line tracer

// NOTE [a C line tracer]
//     ``timeline.LineTracer`` notes the snippet's current line against autograd's sequence
//     counter (NOTE [lines by sequence number]). As a ``sys.settrace`` function it cost a
//     Python call on every Python call anywhere outside library modules: an optimizer's step
//     in a training loop makes hundreds, and tracing was a third of such a snippet's capture.
//     Here the trace function is C: a call, line or return event of another file costs a
//     pointer comparison; on the snippet's lines it calls ``on_step`` (only when nodes are
//     pending: NOTE [discovery in batches], or a wake-up is asked for: NOTE [optimizer
//     steps] in library.py) and notes the line in the Python ``SeqLog``, as the Python
//     tracer did. Suspending and pausing remove it (``PyEval_SetTrace(NULL)``), so
//     library modules still run untraced.
struct LineTrace {
  py::object filename, log, on_step, pending, wake, current_key;
  PyObject* seqs = nullptr;    // log._seqs (kept alive by ``log``)
  PyObject* values = nullptr;  // log._values
  std::unordered_map<PyObject*, bool> files;  // co_filename -> is the snippet's (refs held)
  // the last file asked about and its answer (a reference in ``files``): a run of events
  // from one file (a library function's lines) costs no hash look-up each
  PyObject* last_file = nullptr;
  bool last_mine = false;
  ~LineTrace() {
    for (auto& [f, _] : files) Py_DECREF(f);
  }

  bool mine(PyFrameObject* frame) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    PyObject* f = code->co_filename;
    Py_DECREF(code);
    if (f == filename.ptr()) return true;
    if (f == last_file) return last_mine;
    auto it = files.find(f);
    if (it == files.end()) {
      int eq = PyUnicode_Compare(f, filename.ptr());
      if (eq == -1 && PyErr_Occurred()) PyErr_Clear();
      Py_INCREF(f);
      it = files.emplace(f, eq == 0).first;
    }
    last_file = f;
    last_mine = it->second;
    return last_mine;
  }

  // ``SeqLog.note(line)``
  int note(int line) {
    int64_t seq = static_cast<int64_t>(at::sequence_number::peek());
    PyObject* v = PyLong_FromLong(line);
    if (v == nullptr) return -1;
    if (PyObject_SetAttr(log.ptr(), current_key.ptr(), v) < 0) { Py_DECREF(v); return -1; }
    Py_ssize_t n = PyList_GET_SIZE(seqs);
    if (n > 0 && PyLong_AsLongLong(PyList_GET_ITEM(seqs, n - 1)) == seq) {
      return PyList_SetItem(values, n - 1, v);  // steals v
    }
    PyObject* s = PyLong_FromLongLong(seq);
    int rc = s == nullptr ? -1 : PyList_Append(seqs, s);
    Py_XDECREF(s);
    if (rc == 0) rc = PyList_Append(values, v);
    Py_DECREF(v);
    return rc;
  }

  int step() {
    if (on_step.is_none() ||
        (PyList_GET_SIZE(pending.ptr()) == 0 && PyList_GET_SIZE(wake.ptr()) == 0)) return 0;
    PyObject* r = PyObject_CallNoArgs(on_step.ptr());
    if (r == nullptr) return -1;
    Py_DECREF(r);
    return 0;
  }
};

thread_local LineTrace* active_trace = nullptr;

int trace_line(PyObject*, PyFrameObject* frame, int what, PyObject*) {
  LineTrace* t = active_trace;
  if (t == nullptr || (what != PyTrace_LINE && what != PyTrace_RETURN) || !t->mine(frame)) return 0;
  int rc = t->step();
  if (rc == 0) {
    if (what == PyTrace_LINE) {
      rc = t->note(PyFrame_GetLineNumber(frame));
    } else {  // back to the innermost snippet frame still running (maybe via library code)
      PyFrameObject* back = PyFrame_GetBack(frame);
      while (back != nullptr && !t->mine(back)) {
        PyFrameObject* next = PyFrame_GetBack(back);
        Py_DECREF(back);
        back = next;
      }
      if (back != nullptr) {
        rc = t->note(PyFrame_GetLineNumber(back));
        Py_DECREF(back);
      }
    }
  }
  if (rc < 0) {  // as sys.settrace does when its function raises: tracing ends here
    PyEval_SetTrace(nullptr, nullptr);
  }
  return rc;
}

// The Python face: ``timeline.LineTracer`` drives it (install, enable/disable, uninstall).
struct Tracer {
  std::unique_ptr<LineTrace> t;

  void start(py::object filename, py::object log, py::object on_step, py::list pending,
             py::list wake) {
    stop();  // an earlier run of this tracer: never leave the trace function a freed state
    auto fresh = std::make_unique<LineTrace>();
    fresh->filename = std::move(filename);
    fresh->log = std::move(log);
    fresh->on_step = std::move(on_step);
    fresh->pending = std::move(pending);
    fresh->wake = std::move(wake);
    fresh->current_key = py::reinterpret_steal<py::object>(PyUnicode_InternFromString("current"));
    py::object seqs = fresh->log.attr("_seqs"), values = fresh->log.attr("_values");
    if (!PyUnicode_Check(fresh->filename.ptr()) || !PyList_Check(seqs.ptr()) || !PyList_Check(values.ptr())) {
      throw py::type_error("Tracer.start(filename: str, log: SeqLog, on_step, pending: list, wake: list)");
    }
    fresh->seqs = seqs.ptr();      // kept alive by ``log``, which the SeqLog never rebinds
    fresh->values = values.ptr();
    t = std::move(fresh);
    active_trace = t.get();
    set_enabled(true);
  }

  void set_enabled(bool on) {
    if (!t) return;
    // ``sys.gettrace()`` then answers an inert mark (not this object: a snippet could call it):
    // a nested record sees that tracing is taken
    if (on) PyEval_SetTrace(trace_line, mark());
    else PyEval_SetTrace(nullptr, nullptr);
  }

  static PyObject* mark() {
    static PyObject* m = PyUnicode_InternFromString("gradtrace line tracer (C)");  // immutable
    return m;
  }

  void stop() {
    if (!t) return;
    set_enabled(false);
    if (active_trace == t.get()) active_trace = nullptr;
    t.reset();
  }
};

}  // namespace gradtrace
