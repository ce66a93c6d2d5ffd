// gradtrace capture core: what must run once per autograd node, in C++.
//
// NOTE [why C++]
//     Capture must run at near-bare speed (bench/bench_capture.py: a GRUCell unrolled 200 steps,
//     3,200 nodes, within 3x of the bare forward+backward), which leaves ~15 us per node for everything.
//     A Python post hook on every node costs ~5 us just to be called (the engine wraps every
//     gradient in a Python object), before anything is recorded; reading a gradient's values
//     and stats with torch ops from Python costs 5-20 us more; and writing each event as a
//     Python dict and then as JSON costs as much again. Here a hook is a C++ object on the
//     node, it copies small gradients (<= VALUES_LIMIT elements) and reduces large ones in
//     one pass over their memory, and the events are written as canonical JSON directly.
//     Python only sees the events in bulk, after each backward call (``drain``).
//
// NOTE [same bytes as json.dumps]
//     The JSON written here must be byte for byte what ``gradtrace.schema.canonical_json``
//     writes for the same events as Python objects (sorted keys, compact separators, floats as
//     ``repr`` writes them, NaN/inf as strings): document ids are hashes of those bytes, and
//     the web process recomputes them. ``format_double`` writes the shortest round-trip digits
//     (``std::to_chars``) in ``repr``'s layout; tests hold both equal on millions of floats.
//
// NOTE [no retained gradients]
//     Nothing here keeps a gradient alive: holding references to every gradient made the
//     transformer's backward 30% slower (fresh memory for each, no in-place accumulation in
//     the engine's input buffers). A gradient met twice (node A's grad_input is node B's
//     grad_output) is recognised by its TensorImpl address, version and a weak reference
//     (which keeps the address from being reused without keeping the storage alive).
//
// The parts, in order (one translation unit): cxx/prelude.h, json.h, keys.h (generated from
// the schema), values.h, pyobjects.h,
// entries.h, core.h, events.h, walk.h, tap.h, tensorfile.h, stats.h, recorder.h, tracer.h, keptfile.h; the Python module
// below.

#include "cxx/prelude.h"
#include "cxx/json.h"
#include "cxx/keys.h"
#include "cxx/values.h"
#include "cxx/pyobjects.h"
#include "cxx/entries.h"
#include "cxx/core.h"
#include "cxx/events.h"
#include "cxx/walk.h"
#include "cxx/tap.h"
#include "cxx/tensorfile.h"
#include "cxx/stats.h"
#include "cxx/recorder.h"
#include "cxx/tracer.h"
#include "cxx/keptfile.h"
#include "cxx/valuesteps.h"

PYBIND11_MODULE(_native, m) {
  m.doc() = "gradtrace capture core (see _native.cpp)";
  m.attr("VALUES_LIMIT") = gradtrace::kValuesLimit;
  m.def("format_double", [](double x) {
    std::string out;
    gradtrace::format_double(out, x);
    return out;
  });
  m.def("format_float32", [](double x) {
    std::string out;
    gradtrace::format_float32(out, x);
    return out;
  });
  m.def("write_tensor_file", &gradtrace::write_tensor_file);
  m.def("write_keyed_file", &gradtrace::write_keyed_file);  // NOTE [the tensor file's side in bulk]
  // NOTE [the kept file in one place]
  py::class_<gradtrace::KeptFile>(m, "KeptFile")
      .def(py::init<>())
      .def("add", &gradtrace::KeptFile::add)
      .def("set_text", &gradtrace::KeptFile::set_text)
      .def("drop_nodes", &gradtrace::KeptFile::drop_nodes)
      .def("first_nonfinite_output", &gradtrace::KeptFile::first_nonfinite_output)
      .def("output_texts", &gradtrace::KeptFile::output_texts)
      .def("splice_graph", &gradtrace::KeptFile::splice_graph)
      .def("promote", &gradtrace::KeptFile::promote)
      .def("build", &gradtrace::KeptFile::build)
      .def("get", &gradtrace::KeptFile::get, py::arg("key"), py::arg("default") = py::none())
      .def("__contains__", [](const gradtrace::KeptFile& f, const py::object& key) {
        return py::isinstance<py::str>(key) && f.contains(key.cast<std::string>());
      })
      .def("__getitem__", [](const gradtrace::KeptFile& f, const std::string& key) {
        py::object v = f.get(key, py::none());
        if (v.is_none()) throw py::key_error(key);
        return v;
      })
      .def("__iter__", [](const gradtrace::KeptFile& f) { return py::iter(f.keys()); })
      .def("__len__", &gradtrace::KeptFile::count)
      .def("keys", &gradtrace::KeptFile::keys)
      .def("rows", &gradtrace::KeptFile::size)
      .def("splice_events", &gradtrace::KeptFile::splice_events)
      .def("index_graph", &gradtrace::KeptFile::index_graph)  // NOTE [the graph's nodes found once]
      .def("not_functions", &gradtrace::KeptFile::not_functions)
      .def("own_outputs", &gradtrace::KeptFile::own_outputs);
  // NOTE [a leaf's value around each step] in capture/valuesteps.py: its norms, all at once
  m.def("float32_values", &gradtrace::float32_values);
  // NOTE [a loop's look in one check] in capture/valuesteps.py: a loop's look in one call
  py::class_<gradtrace::LeafGroup>(m, "LeafGroup")
      .def(py::init<const py::list&>())
      .def("look", &gradtrace::LeafGroup::look);
  m.def("tap_key", []() { return static_cast<int>(gradtrace::kTapKey); });
  m.def("encode_json", [](const at::Tensor& t) {
    gradtrace::Value v = gradtrace::encode(t);
    std::string out;
    if (v.kind == 3) return py::bytes("");
    gradtrace::write_value(out, v, true);
    return py::bytes(out);
  });
  py::class_<gradtrace::Tracer>(m, "Tracer")
      .def(py::init<>())
      .def("start", &gradtrace::Tracer::start)
      .def("set_enabled", &gradtrace::Tracer::set_enabled)
      .def("stop", &gradtrace::Tracer::stop);
  py::class_<gradtrace::Recorder>(m, "Recorder")
      .def(py::init<>())
      .def("configure", &gradtrace::Recorder::configure)
      .def("sync_bytes", &gradtrace::Recorder::sync_bytes)
      .def("discover", &gradtrace::Recorder::discover)
      .def("index_of", &gradtrace::Recorder::index_of)
      .def("set_var", &gradtrace::Recorder::set_var)
      .def("infos", &gradtrace::Recorder::infos)
      .def("begin_pass", &gradtrace::Recorder::begin_pass)
      .def("set_active", &gradtrace::Recorder::set_active)
      .def("stop", &gradtrace::Recorder::stop)
      .def("set_boundary", &gradtrace::Recorder::set_boundary)
      .def("new_engine_passes", &gradtrace::Recorder::new_engine_passes)
      .def("end_backward", &gradtrace::Recorder::end_backward)
      .def("take_accumulations", &gradtrace::Recorder::take_accumulations)
      .def("hook_change", &gradtrace::Recorder::hook_change)
      .def("accumulated", &gradtrace::Recorder::accumulated)
      .def("held", &gradtrace::Recorder::held)
      .def("set_encoded", &gradtrace::Recorder::set_encoded)
      .def("capture", &gradtrace::Recorder::capture)
      .def("kept", &gradtrace::Recorder::kept)
      .def("keep_copy", &gradtrace::Recorder::keep_copy)
      .def("tap_start", &gradtrace::Recorder::tap_start)
      .def("tap_stop", &gradtrace::Recorder::tap_stop)
      .def("tap_pause", &gradtrace::Recorder::tap_pause)
      .def("tap_paused", &gradtrace::Recorder::tap_paused)
      .def("tap_entries", &gradtrace::Recorder::tap_entries)
      .def("tap_clear", &gradtrace::Recorder::tap_clear)
      // NOTE [held gradients copied before a write] in cxx/tap.h: a write no op announced
      .def("tap_stale", [](gradtrace::Recorder& r, const at::Tensor& t) { if (r.tap_) r.tap_->stale(t); })
      .def("set_keep_budget", &gradtrace::Recorder::set_keep_budget)
      .def("event_refs", &gradtrace::Recorder::event_refs)
      .def("saved_kept", &gradtrace::Recorder::saved_kept)
      .def("held_peak", &gradtrace::Recorder::held_peak)
      .def("release_kept", &gradtrace::Recorder::release_kept)
      .def("value", &gradtrace::Recorder::value)
      .def("numel_of", &gradtrace::Recorder::numel_of)
      .def("events_json", &gradtrace::Recorder::events_json)
      // NOTE [the tensor file's side in bulk] (cxx/stats.h)
      .def("stats_json", [](gradtrace::Recorder&, const std::vector<at::Tensor>& ts) {
        return gradtrace::stats_json(ts);
      })
      .def("event_candidates", [](gradtrace::Recorder& r, const py::bytes&, const std::vector<int32_t>& acc) {
        return gradtrace::event_candidates(*r.core, acc);
      })
      // NOTE [the kept file in one place] (cxx/keptfile.h): the core's rows into ``file``
      .def("kept_events", [](gradtrace::Recorder& r, gradtrace::KeptFile& file, const std::vector<int32_t>& acc) {
        return file.events(*r.core, acc);
      })
      .def("kept_outputs", [](gradtrace::Recorder& r, gradtrace::KeptFile& file) {
        return file.outputs(*r.core, r.tap_.get(), r.entries_, r.pos_);
      })
      .def("nodes_json", &gradtrace::Recorder::nodes_json)
      .def("edges_json", &gradtrace::Recorder::edges_json)
      .def("changes", &gradtrace::Recorder::changes)
      .def("mark_freed", &gradtrace::Recorder::mark_freed)
      .def("saved_total", &gradtrace::Recorder::saved_total)
      .def("close", &gradtrace::Recorder::close);
}
