#include "api.h"

#include <dlfcn.h>

#include <vector>

#include "../cupti/loader.h"

namespace dlpt::pcsampling {

namespace {

PcApi g_pc;
bool g_resolved = false;
std::string g_reason;  // why g_pc is unusable, when it is

// CUPTI 12.4 (API version 22) added correlationId to CUpti_PCSamplingPCData: the PC record array
// is laid out by sizeof(), so a library on the other side of that change would be misread.
constexpr uint32_t kPcRecordLayoutVersion = 22;

template <typename T>
bool bind(void* lib, const char* name, T* slot, std::string* missing) {
  *slot = reinterpret_cast<T>(dlsym(lib, name));
  if (*slot == nullptr) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *slot != nullptr;
}

void resolve(const std::vector<std::string>& candidates) {
  std::string error;
  const CuptiApi* cupti = load_cupti(candidates, &error);
  if (cupti == nullptr) {
    g_reason = "CUPTI could not be loaded";
    return;
  }
  g_pc.cupti_path = cupti->path;
  // RTLD_NOLOAD: the very copy load_cupti chose, already mapped; a handle, never a second copy.
  void* lib = dlopen(cupti->path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) {
    g_reason = "CUPTI at " + cupti->path + " could not be reopened";
    return;
  }
  std::string missing;
#define DLPT_PCS_BIND(name) bind(lib, #name, &g_pc.name, &missing);
  DLPT_PCS_BIND(cuptiGetVersion)
  DLPT_PCS_BIND(cuptiGetResultString)
  DLPT_PCS_BIND(cuptiSubscribe)
  DLPT_PCS_BIND(cuptiEnableCallback)
  DLPT_PCS_BIND(cuptiPCSamplingGetNumStallReasons)
  DLPT_PCS_BIND(cuptiPCSamplingGetStallReasons)
  DLPT_PCS_BIND(cuptiPCSamplingSetConfigurationAttribute)
  DLPT_PCS_BIND(cuptiPCSamplingEnable)
  DLPT_PCS_BIND(cuptiPCSamplingDisable)
  DLPT_PCS_BIND(cuptiPCSamplingStart)
  DLPT_PCS_BIND(cuptiPCSamplingStop)
  DLPT_PCS_BIND(cuptiPCSamplingGetData)
  DLPT_PCS_BIND(cuptiGetSassToSourceCorrelation)
  DLPT_PCS_BIND(cuptiGetCubinCrc)
#undef DLPT_PCS_BIND
  if (!missing.empty()) {
    g_reason = "this CUPTI (" + cupti->path + ") has no PC sampling API (missing " + missing + ")";
    return;
  }
  g_pc.cuptiGetVersion(&g_pc.version);
  if ((g_pc.version >= kPcRecordLayoutVersion) != (CUPTI_API_VERSION >= kPcRecordLayoutVersion)) {
    g_reason = "CUPTI API version " + std::to_string(g_pc.version) + " has another PC record layout than the " +
               std::to_string(CUPTI_API_VERSION) + " dlpt was built with (rebuild dlpt against this CUDA)";
    return;
  }
  g_reason.clear();
}

}  // namespace

std::string PcApi::error(CUptiResult r) const {
  const char* s = nullptr;
  if (cuptiGetResultString && cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

bool current_cuda_context(CUcontext* ctx, std::string* error) {
  static CUresult (*get_current)(CUcontext*) = nullptr;
  if (get_current == nullptr) {
    if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD))
      get_current = reinterpret_cast<CUresult (*)(CUcontext*)>(dlsym(cuda, "cuCtxGetCurrent"));
  }
  *ctx = nullptr;
  if (get_current == nullptr) {
    if (error) *error = "the CUDA driver (libcuda.so.1) is not loaded";
    return false;
  }
  if (get_current(ctx) != CUDA_SUCCESS || *ctx == nullptr) {
    if (error) *error = "no CUDA context is current on this thread";
    return false;
  }
  return true;
}

const PcApi* pc_api(const std::vector<std::string>& candidates, std::string* reason) {
  if (!g_resolved) {
    g_resolved = true;
    resolve(candidates);
  }
  if (!g_reason.empty()) {
    if (reason) *reason = g_reason;
    return nullptr;
  }
  return &g_pc;
}

}  // namespace dlpt::pcsampling
