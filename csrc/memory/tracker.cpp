#include "tracker.h"

#include <algorithm>
#include <utility>

namespace dlpt::memory {

Tracker& tracker() {
  static Tracker* t = new Tracker();  // never destroyed: late allocator callbacks find it alive
  return *t;
}

void Tracker::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  devices_.clear();
  live_.clear();
  counters_.clear();
  oom_ = OomReport{};
  any_oom_ = false;
  events_ = 0;
  missed_frees_ = 0;
}

uint32_t Tracker::device_slot(DeviceId id) {
  for (uint32_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].id == id) return i;
  }
  if (devices_.size() == kMaxDevices) return kMaxDevices - 1;
  Device d;
  d.id = id;
  devices_.push_back(d);
  return static_cast<uint32_t>(devices_.size() - 1);
}

void Tracker::update_totals(Device& d, uint64_t allocated, uint64_t reserved) {
  d.allocated = allocated;
  d.reserved = reserved;
  d.step.peak_reserved = std::max(d.step.peak_reserved, reserved);
  if (allocated > d.step.peak_allocated) {
    // A new peak: the current state becomes the snapshot (one increment, see tracker.h).
    d.step.peak_allocated = allocated;
    d.step.reserved_at_peak = reserved;
    d.step.traced_at_peak = d.traced;
    ++d.epoch;
  }
}

Tracker::Counter& Tracker::touch(NodeId node, uint32_t device) {
  Counter& c = counters_[key(node, device)];
  const uint64_t epoch = devices_[device].epoch;
  if (c.epoch != epoch) {  // first change since the peak: keep the value it had there
    c.at_peak = c.live;
    c.epoch = epoch;
  }
  return c;
}

void Tracker::release_block(const Block& b) {
  Counter& c = touch(b.node, b.device);
  c.live -= std::min(c.live, b.bytes);
  Device& d = devices_[b.device];
  d.traced -= std::min(d.traced, b.bytes);
}

void Tracker::on_alloc(DeviceId dev, const void* ptr, uint64_t bytes, uint64_t allocated, uint64_t reserved,
                       NodeId node) {
  std::lock_guard<std::mutex> lock(mu_);
  ++events_;
  const uint32_t slot = device_slot(dev);
  auto it = live_.find(ptr);
  if (it != live_.end()) {
    // The address was handed out again, so its earlier block was freed where we could not see
    // it (a thread without dlpt's reporter): release it now rather than count it forever.
    release_block(it->second);
    live_.erase(it);
    ++missed_frees_;
  }
  Device& d = devices_[slot];
  if (node != kNoNode) {
    Counter& c = touch(node, slot);
    c.live += bytes;
    c.alloc_bytes += bytes;
    ++c.allocs;
    d.traced += bytes;
    live_.emplace(ptr, Block{node, slot, bytes});
  }
  update_totals(d, allocated, reserved);  // after the change: the peak includes this block
}

void Tracker::on_free(DeviceId dev, const void* ptr, uint64_t allocated, uint64_t reserved) {
  std::lock_guard<std::mutex> lock(mu_);
  ++events_;
  const uint32_t slot = device_slot(dev);
  auto it = live_.find(ptr);
  if (it != live_.end()) {
    release_block(it->second);
    live_.erase(it);
  }
  update_totals(devices_[slot], allocated, reserved);
}

void Tracker::on_oom(DeviceId dev, uint64_t requested, uint64_t allocated, uint64_t reserved, NodeId node) {
  std::lock_guard<std::mutex> lock(mu_);
  ++events_;
  const uint32_t slot = device_slot(dev);
  ++oom_.count;
  if (any_oom_) return;  // the first failure is the one explained; later ones are counted
  any_oom_ = true;
  oom_.device = slot;
  oom_.requested = requested;
  oom_.allocated = allocated;
  oom_.reserved = reserved;
  oom_.node = node;
  // Once per session: what every node held on that device at the failure.
  for (auto& [k, c] : counters_) {
    if ((k & 0xFF) == slot) c.oom_bytes = c.live;
  }
  devices_[slot].oom = true;
}

void Tracker::begin_step_locked() {
  for (Device& d : devices_) {
    d.step = StepPeak{d.allocated, d.reserved, d.reserved, d.traced};
    ++d.epoch;  // the snapshot starts as the current state
  }
}

void Tracker::step_begin() {
  std::lock_guard<std::mutex> lock(mu_);
  begin_step_locked();
}

void Tracker::step_end(bool counted) {
  std::lock_guard<std::mutex> lock(mu_);
  if (counted) {
    for (Device& d : devices_) d.steps.push_back(d.step);
    for (auto& [k, c] : counters_) {
      const Device& d = devices_[k & 0xFF];
      c.peak_bytes += c.epoch == d.epoch ? c.at_peak : c.live;
    }
  }
  begin_step_locked();
}

void Tracker::restart_steps(bool extend) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Device& d : devices_) {
    if (!extend) d.dropped_steps.clear();
    d.dropped_steps.insert(d.dropped_steps.end(), d.steps.begin(), d.steps.end());
    d.steps.clear();
  }
  for (auto& [k, c] : counters_)
    c.dropped_peak_bytes = (extend ? c.dropped_peak_bytes : 0) + std::exchange(c.peak_bytes, 0);
}

void Tracker::restore_steps() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Device& d : devices_) {
    d.steps.insert(d.steps.begin(), d.dropped_steps.begin(), d.dropped_steps.end());
    d.dropped_steps.clear();
  }
  for (auto& [k, c] : counters_) c.peak_bytes += std::exchange(c.dropped_peak_bytes, 0);
}

Export Tracker::snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  Export out;
  for (const Device& d : devices_) out.devices.push_back(DeviceExport{d.id, d.steps, d.allocated, d.reserved});
  for (const auto& [k, c] : counters_) {
    if (c.alloc_bytes || c.allocs || c.peak_bytes || c.oom_bytes) {
      out.nodes.push_back(NodeTotals{static_cast<NodeId>(k >> 8), static_cast<size_t>(k & 0xFF), c.alloc_bytes,
                                     c.allocs, c.peak_bytes, c.oom_bytes});
    }
  }
  out.oom = any_oom_;
  out.oom_report = oom_;
  out.events = events_;
  out.missed_frees = missed_frees_;
  return out;
}

}  // namespace dlpt::memory
