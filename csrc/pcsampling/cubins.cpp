#include "cubins.h"

#include <cstdlib>

namespace dlpt::pcsampling {

namespace {

uint64_t cubin_crc(const PcApi& api, const void* cubin, size_t size) {
  CUpti_GetCubinCrcParams p{};
  p.size = CUpti_GetCubinCrcParamsSize;
  p.cubinSize = size;
  p.cubin = cubin;
  return api.cuptiGetCubinCrc(&p) == CUPTI_SUCCESS ? p.cubinCrc : 0;
}

/// dir + "/" + file, as the cubin's line table names them (file alone when absolute or no dir).
std::string join(const char* dir, const char* file) {
  std::string f = file ? file : "";
  if (f.empty() || f[0] == '/' || dir == nullptr || dir[0] == '\0') return f;
  std::string d = dir;
  return d.back() == '/' ? d + f : d + "/" + f;
}

}  // namespace

void CubinStore::add(const PcApi& api, const char* cubin, size_t size) {
  if (cubin == nullptr || size == 0) return;
  const uint64_t crc = cubin_crc(api, cubin, size);
  if (crc == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (cubins_.count(crc)) return;
  cubins_.emplace(crc, std::vector<char>(cubin, cubin + size));
  bytes_ += size;
}

SourceLine CubinStore::resolve(const PcApi& api, uint64_t crc, const char* function, uint64_t pc_offset) {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_tuple(crc, std::string(function ? function : ""), pc_offset);
  auto hit = lines_.find(key);
  if (hit != lines_.end()) return hit->second;
  SourceLine out;
  auto cubin = cubins_.find(crc);
  if (cubin == cubins_.end()) out.why = "no cubin kept for its CRC (loaded before module loads were watched)";
  if (cubin != cubins_.end() && function != nullptr) {
    CUpti_GetSassToSourceCorrelationParams p{};
    p.size = CUpti_GetSassToSourceCorrelationParamsSize;
    p.cubin = cubin->second.data();
    p.cubinSize = cubin->second.size();
    p.functionName = function;
    p.pcOffset = pc_offset;
    // Fails for cubins without line info (library kernels): the PC then stays unresolved.
    const CUptiResult r = api.cuptiGetSassToSourceCorrelation(&p);
    if (r == CUPTI_SUCCESS) {
      out.file = join(p.dirName, p.fileName);
      out.line = p.lineNumber;
      if (out.file.empty()) out.why = "cuptiGetSassToSourceCorrelation: success without a file name";
    } else {
      out.why = "cuptiGetSassToSourceCorrelation: " + api.error(r);
    }
    std::free(p.fileName);  // CUPTI allocates both; the caller frees them
    std::free(p.dirName);
  }
  lines_.emplace(std::move(key), out);
  return out;
}

size_t CubinStore::cubins() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cubins_.size();
}

size_t CubinStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

bool CubinStore::has(uint64_t crc) const {
  std::lock_guard<std::mutex> lock(mu_);
  return cubins_.count(crc) != 0;
}

CubinStore& cubin_store() {
  static CubinStore* store = new CubinStore();  // never destroyed: callbacks may outlive exit
  return *store;
}

}  // namespace dlpt::pcsampling
