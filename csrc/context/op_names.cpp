#include "op_names.h"

#include <cstring>
#include <string_view>

namespace dlpt {

namespace {

/// FNV-1a over the bytes up to the terminating NUL; also gives the length.
uint64_t hash_text(const char* s, size_t* len) {
  uint64_t h = 0xcbf29ce484222325ull;
  const char* p = s;
  for (; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 0x100000001b3ull;
  *len = static_cast<size_t>(p - s);
  return h;
}

size_t ptr_slot(const char* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  return static_cast<size_t>((v ^ (v >> 12)) * 0x9E3779B97F4A7C15ull >> 54);  // top 10 bits
}

/// An autograd node torch generates from derivatives.yaml: "<Op>Backward<N>" (AddmmBackward0).
/// Python autograd.Functions' nodes are "<Class>Backward", without the number.
bool is_generated_backward_node(std::string_view name) {
  size_t digits = 0;
  while (digits < name.size() && name[name.size() - 1 - digits] >= '0' && name[name.size() - 1 - digits] <= '9')
    ++digits;
  if (digits == 0) return false;
  const std::string_view stem = name.substr(0, name.size() - digits);
  constexpr std::string_view kBackward = "Backward";
  return stem.size() > kBackward.size() && stem.substr(stem.size() - kBackward.size()) == kBackward;
}

std::vector<std::string> g_flops_ops;  // written under the GIL before capture starts

uint8_t flags_of(std::string_view name) {
  uint8_t f = 0;
  if (name.rfind("c10d::", 0) == 0 || name.rfind("_c10d_functional::", 0) == 0) f |= kComm;
  if (name == "record_param_comms") f |= kParamComms;
  for (const std::string& op : g_flops_ops) {
    if (name == op) f |= kFlops;
  }
  if (name.rfind("Torch-Compiled Region", 0) == 0 || name == "CompiledFunction" || name == "CompiledFunctionBackward")
    f |= kCompiledRegion;
  if (name.rfind("profiler::", 0) == 0) f |= kPlumbing;
  if (name.rfind("aten::", 0) == 0 || is_generated_backward_node(name)) f |= kWindowable;
  return f;
}

}  // namespace

static_assert((size_t{1} << 10) == 1024, "ptr_slot yields 10 bits");

void set_flops_ops(const std::vector<std::string>& names) { g_flops_ops = names; }

OpNames::OpNames(StringTable& strings) : strings_(strings), ptr_cache_(new PtrSlot[kPtrSlots]), texts_(256) {}

uint32_t OpNames::id(const char* name) {
  PtrSlot& slot = ptr_cache_[ptr_slot(name)];
  if (slot.ptr == name && std::strcmp(slot.text, name) == 0) return slot.id;
  const TextSlot found = by_content(name);
  slot = PtrSlot{name, found.text, found.id};
  return found.id;
}

OpNames::TextSlot OpNames::by_content(const char* name) {
  size_t len = 0;
  const uint64_t h = hash_text(name, &len);
  const size_t mask = texts_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    TextSlot& t = texts_[i];
    if (t.text == nullptr) break;
    if (t.hash == h && std::strcmp(t.text, name) == 0) return t;
  }
  // First sighting on this thread: intern (the session-wide table may know it already).
  const char* stable = nullptr;
  bool folded = false;
  const uint32_t id = strings_.intern_name(std::string_view(name, len), &stable, &folded);
  if (id >= infos_.size()) infos_.resize(id + 1);
  if (!infos_[id].seen) {
    infos_[id].seen = true;
    infos_[id].flags = flags_of(stable);  // the name's, or the pattern's it was folded into
  }
  // A folded name is not kept here (its text is not `stable`'s): numbered names made without
  // end must not grow this table either; each of them is looked up in the session's table.
  if (folded) return TextSlot{h, stable, id};
  if ((text_count_ + 1) * 2 > texts_.size()) grow_text_table();
  const size_t mask2 = texts_.size() - 1;
  size_t i = h & mask2;
  while (texts_[i].text != nullptr) i = (i + 1) & mask2;
  texts_[i] = TextSlot{h, stable, id};
  ++text_count_;
  return texts_[i];
}

void OpNames::grow_text_table() {
  std::vector<TextSlot> old(texts_.size() * 2);
  old.swap(texts_);
  const size_t mask = texts_.size() - 1;
  for (const TextSlot& t : old) {
    if (t.text == nullptr) continue;
    size_t i = t.hash & mask;
    while (texts_[i].text != nullptr) i = (i + 1) & mask;
    texts_[i] = t;
  }
}

}  // namespace dlpt
