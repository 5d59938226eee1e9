#include "op_details_capture.h"

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/distributed/c10d/ParamCommsUtils.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

#include "../session.h"
#include "thread_state.h"

namespace dlpt {

namespace {
/// `v` in decimal, appended without a temporary string.
void append_int(std::string& out, int64_t v) {
  char digits[24];
  const int n = std::snprintf(digits, sizeof(digits), "%lld", static_cast<long long>(v));
  out.append(digits, static_cast<size_t>(n));
}
}  // namespace

/// JSON text of a record's inputs: tensors as ["T", [dtype, [sizes]]] (["T", null] when undefined),
/// tensor lists as ["TL", [[dtype, [sizes]], ...]], numbers and booleans as themselves, None as
/// null, int and bool lists as lists; anything else as "?". Non-finite doubles are written as
/// nan/inf (not JSON): readers map them to None. What dlpt.capture.flops needs to evaluate torch's FLOP formulas.
std::string_view input_signature(const at::RecordFunction& rf) {
  thread_local std::string out;
  out.assign(1, '[');
  auto ints = [&](c10::IntArrayRef values) {
    out += '[';
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) out += ',';
      append_int(out, values[i]);
    }
    out += ']';
  };
  auto tensor = [&](const at::Tensor& t) {  // [dtype, [sizes]] or null
    if (!t.defined()) {
      out += "null";
      return;
    }
    out += "[\"";
    out += c10::toString(t.scalar_type());
    out += "\",";
    ints(t.sizes());
    out += ']';
  };
  bool first = true;
  for (const c10::IValue& v : rf.inputs()) {
    if (!first) out += ',';
    first = false;
    if (v.isTensor()) {
      out += "[\"T\",";
      tensor(v.toTensor());
      out += ']';
    } else if (v.isTensorList()) {
      out += "[\"TL\",[";
      bool f = true;
      for (const at::Tensor& t : v.toTensorVector()) {
        if (!f) out += ',';
        tensor(t);
        f = false;
      }
      out += "]]";
    } else if (v.isNone()) {
      out += "null";
    } else if (v.isBool()) {
      out += v.toBool() ? "true" : "false";
    } else if (v.isInt()) {
      append_int(out, v.toInt());
    } else if (v.isDouble()) {
      out += std::to_string(v.toDouble());
    } else if (v.isIntList()) {
      ints(v.toDimVector());
    } else if (v.isBoolList()) {  // e.g. convolution_backward's output_mask
      out += '[';
      bool f = true;
      for (bool b : v.toBoolList()) {
        if (!f) out += ',';
        out += b ? "true" : "false";
        f = false;
      }
      out += ']';
    } else {
      out += "\"?\"";
    }
  }
  out += ']';
  return out;
}

/// At a collective's "record_param_comms" record: what it moves, from the debug info torch
/// attaches to the thread for its duration (torch/csrc/distributed/c10d/ParamCommsUtils.hpp;
/// checked against torch 2.11 and 2.13), added to the enclosing c10d op's node.
void note_collective(Session& s, ThreadState& ts) {
  auto* info =
      static_cast<torch::ParamCommsDebugInfo*>(c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PARAM_COMMS_INFO));
  if (info == nullptr) return;
  // The c10d op is the innermost entry with its own node.
  NodeId op = kNoNode;
  for (size_t i = ts.depth(); i-- > 0 && op == kNoNode;) op = ts.at(i).op_node;
  if (op == kNoNode) return;
  const size_t elem = c10::elementSize(info->getDType());
  CommCall c;
  c.collective = info->getCollectiveName();
  c.dtype = c10::toString(info->getDType());
  c.pg_name = info->getProcessGroupName();
  c.pg_desc = info->getProcessGroupDesc();
  c.world_size = info->getWorldSize();
  c.calls = 1;
  c.in_bytes = static_cast<uint64_t>(std::max<int64_t>(info->getInMessageNelems(), 0)) * elem;
  c.out_bytes = static_cast<uint64_t>(std::max<int64_t>(info->getOutMessageNelems(), 0)) * elem;
  s.details.add_comm(op, c, s.epochs.current());
}

}  // namespace dlpt
