// The cubins loaded while PC sampling may be wanted, kept by CRC (the key CUPTI puts on every PC
// record), and each PC's source line, resolved once per (cubin, function, PC offset).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "api.h"

namespace dlpt::pcsampling {

struct SourceLine {
  std::string file;  // "" when the cubin has no line info for this PC (library kernels)
  uint32_t line = 0;
  std::string why;  // with no file: why (no kept cubin, CUPTI's error, or no file in its answer)
};

class CubinStore {
 public:
  /// [MT] A module was loaded (CUPTI's MODULE_LOADED callback, on the loading thread): its cubin
  /// is copied (CUPTI's pointer is only valid during the callback) unless a cubin with the same
  /// CRC is already kept. Cost: one CRC and one copy per distinct module load; nothing per launch.
  void add(const PcApi& api, const char* cubin, size_t size);

  /// [MT] file:line of `pc_offset` in `function` of the cubin with `crc`; cached. No cubin (loaded
  /// before dlpt watched module loads) or no line info: an empty file.
  SourceLine resolve(const PcApi& api, uint64_t crc, const char* function, uint64_t pc_offset);

  size_t cubins() const;
  size_t bytes() const;
  bool has(uint64_t crc) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::vector<char>> cubins_;
  std::map<std::tuple<uint64_t, std::string, uint64_t>, SourceLine> lines_;
  size_t bytes_ = 0;
};

/// The process's store (module loads arrive on any thread, before any profile asks for lines).
CubinStore& cubin_store();

}  // namespace dlpt::pcsampling
