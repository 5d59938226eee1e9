#include "op_details.h"

#include <cstring>

namespace dlpt {

template <typename T>
void OpDetails::Split<T>::catch_up_with_cuts(const Epochs& epochs) {
  seen.catch_up(epochs, [this](Filed from, Filed to) {
    bucket(to).add(bucket(from));
    bucket(from) = T{};
  });
}

template <typename T>
T& OpDetails::Split<T>::at(uint32_t e, const Epochs& epochs) {
  catch_up_with_cuts(epochs);
  if (has_pending && e != pending_epoch) {
    // An epoch that already ended (an op that read the epoch before a boundary): its class is
    // known. A later one: the pending epoch ended, fold it.
    if (e < pending_epoch) return bucket(epochs.filed(e));
    fold(epochs);
  }
  if (!has_pending) {
    has_pending = true;
    pending_epoch = e;
  }
  return pending;
}

template <typename T>
void OpDetails::Split<T>::fold(const Epochs& epochs) {
  catch_up_with_cuts(epochs);
  if (!has_pending) return;
  bucket(epochs.filed(pending_epoch)).add(pending);
  pending = T{};
  has_pending = false;
}

void OpDetails::add_comm(NodeId op, const CommCall& c, uint32_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = comm_.try_emplace(op);
  if (fresh) it->second.identity = c;
  it->second.counts.at(epoch, epochs_).add(CommCounts{c.calls, c.in_bytes, c.out_bytes});
}

void OpDetails::add_inputs(NodeId op, std::string_view signature, uint32_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = inputs_.find(InputKey{op, signature});
  if (it == inputs_.end()) {
    char* text = static_cast<char*>(arena_.resource()->allocate(signature.size() + 1, 1));
    std::memcpy(text, signature.data(), signature.size());
    it = inputs_.emplace(InputKey{op, std::string_view(text, signature.size())}, Split<Count>{}).first;
  }
  it->second.at(epoch, epochs_).n += 1;
}

std::map<NodeId, CommCall> OpDetails::comm(bool counted) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<NodeId, CommCall> out;
  for (auto& [node, entry] : comm_) {
    entry.counts.fold(epochs_);
    const CommCounts& n = counted ? entry.counts.counted : entry.counts.outside;
    if (n.calls == 0) continue;
    CommCall c = entry.identity;
    c.calls = n.calls;
    c.in_bytes = n.in_bytes;
    c.out_bytes = n.out_bytes;
    out.emplace(node, std::move(c));
  }
  return out;
}

std::map<std::pair<NodeId, std::string>, uint64_t> OpDetails::inputs(bool counted) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::pair<NodeId, std::string>, uint64_t> out;
  for (auto& [key, split] : inputs_) {
    split.fold(epochs_);
    const uint64_t n = counted ? split.counted.n : split.outside.n;
    if (n) out.emplace(std::make_pair(key.op, std::string(key.signature)), n);
  }
  return out;
}

}  // namespace dlpt
