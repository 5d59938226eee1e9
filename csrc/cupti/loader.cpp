#include "loader.h"

#include <dlfcn.h>

#include <mutex>

namespace dlpt {

namespace {

CuptiApi g_api;
bool g_loaded = false;

template <typename T>
bool bind(void* lib, const char* name, T* slot, std::string* missing) {
  *slot = reinterpret_cast<T>(dlsym(lib, name));
  if (*slot == nullptr && missing) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *slot != nullptr;
}

bool bind_all(void* lib, std::string* missing) {
  bool ok = true;
#define DLPT_BIND(name) ok &= bind(lib, #name, &g_api.name, missing);
  DLPT_BIND(cuptiSubscribe)
  DLPT_BIND(cuptiUnsubscribe)
  DLPT_BIND(cuptiEnableCallback)
  DLPT_BIND(cuptiGetCallbackName)
  DLPT_BIND(cuptiGetResultString)
  DLPT_BIND(cuptiGetTimestamp)
  DLPT_BIND(cuptiActivityRegisterCallbacks)
  DLPT_BIND(cuptiActivityEnable)
  DLPT_BIND(cuptiActivityDisable)
  DLPT_BIND(cuptiActivityFlushAll)
  DLPT_BIND(cuptiActivityGetNextRecord)
  DLPT_BIND(cuptiActivityGetNumDroppedRecords)
  DLPT_BIND(cuptiGetGraphNodeId)
#undef DLPT_BIND
  bind(lib, "cuptiSubscribe_v2", &g_api.cuptiSubscribe_v2, nullptr);
  bind(lib, "cuptiActivityFlushPeriod", &g_api.cuptiActivityFlushPeriod, nullptr);
  bind(lib, "cuptiFinalize", &g_api.cuptiFinalize, nullptr);
  return ok;
}

std::string loaded_path(void* lib, const char* fallback) {
  Dl_info info;
  void* sym = dlsym(lib, "cuptiSubscribe");
  if (sym && dladdr(sym, &info) && info.dli_fname) return info.dli_fname;
  return fallback;
}

}  // namespace

const char* CuptiApi::error_string(CUptiResult r) const {
  const char* s = nullptr;
  if (cuptiGetResultString && cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  return "unknown CUPTI error";
}

const CuptiApi* load_cupti(const std::vector<std::string>& candidates, std::string* error) {
  if (g_loaded) return &g_api;
  std::string tried;
  // 1. A copy already in the process (torch's CUDA build links it): RTLD_NOLOAD never loads.
  for (const char* soname : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"}) {
    if (void* lib = dlopen(soname, RTLD_NOW | RTLD_NOLOAD)) {
      std::string missing;
      if (bind_all(lib, &missing)) {
        g_api.path = loaded_path(lib, soname);
        g_loaded = true;
        return &g_api;
      }
      tried += std::string("  ") + soname + " (already loaded): missing " + missing + "\n";
    }
  }
  // 2. The given candidates, in order.
  for (const std::string& path : candidates) {
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (lib == nullptr) {
      const char* err = dlerror();
      tried += "  " + path + ": " + (err ? err : "dlopen failed") + "\n";
      continue;
    }
    std::string missing;
    if (bind_all(lib, &missing)) {
      g_api.path = loaded_path(lib, path.c_str());
      g_loaded = true;
      return &g_api;
    }
    tried += "  " + path + ": missing " + missing + "\n";
  }
  if (error) *error = "could not load CUPTI; tried:\n" + (tried.empty() ? std::string("  (no candidates)\n") : tried);
  return nullptr;
}

}  // namespace dlpt
