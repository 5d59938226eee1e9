#include "counters.h"

namespace dlpt {

CounterValues counter_values(const Session& s, const StopResult& r) {
  CounterValues v;
  // The live counters, copied by the list; the stop ones by hand, each from where it is kept.
#define DLPT_COPY_live(name) v.name = s.counters.name.load();
#define DLPT_COPY_stop(name)
#define DLPT_COPY(name, type, source, doc) DLPT_COPY_##source(name)
  DLPT_COUNTERS(DLPT_COPY)
#undef DLPT_COPY
#undef DLPT_COPY_stop
#undef DLPT_COPY_live
  v.submitted = r.tracer.submitted;
  v.tree_overflow = s.tree.overflowed();
  v.op_records = r.self.op_records;
  v.api_callbacks = r.self.api_callbacks;
  v.self_ns = r.self.self_ns;
  v.self_python_ns = r.self.python_ns;
  v.self_window_ns = r.self.window_ns;
  v.self_api_ns = r.self.api_ns;
  v.python_walks = r.self.python_walks;
  v.python_frames_walked = r.self.frames_walked;
  v.anchored_walks = r.self.anchored_walks;
  v.self_op_end_ns = r.self.op_end_ns;
  v.walk_read_ns = r.self.walk_read_ns;
  v.walk_site_ns = r.self.walk_site_ns;
  v.walk_anchor_ns = r.self.walk_anchor_ns;
  v.site_misses = r.self.site_misses;
  v.anchors_taken = r.self.anchors_taken;
  v.self_op_start_ns = r.self.op_start_ns;
  v.outermost_ops = r.self.outermost_ops;
  v.op_start_name_ns = r.self.op_name_ns;
  v.op_start_nodes_ns = r.self.op_nodes_ns;
  v.op_start_rest_ns = r.self.op_rest_ns;
  v.deferred_ops = r.self.deferred_ops;
  v.deferred_at_launch = r.self.deferred_at_launch;
  v.deferred_at_end = r.self.deferred_at_end;
  v.tsc = s.rate.tsc();
  v.cupti_unsubscribe_error = r.tracer.unsubscribe_error;
  v.tracing_error = s.tracing_error;
  return v;
}

}  // namespace dlpt
