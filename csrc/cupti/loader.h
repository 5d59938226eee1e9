// CUPTI, loaded at run time with dlopen and never linked: `import dlpt` must work on machines
// without CUDA, and we want the very copy torch already loaded (two CUPTI copies in one process
// fight over the same driver hooks).
#pragma once

#include <cupti.h>

#include <string>
#include <vector>

namespace dlpt {

struct CuptiApi {
#define DLPT_CUPTI_FN(name) decltype(&::name) name = nullptr;
  DLPT_CUPTI_FN(cuptiSubscribe)
  DLPT_CUPTI_FN(cuptiUnsubscribe)
  DLPT_CUPTI_FN(cuptiEnableCallback)
  DLPT_CUPTI_FN(cuptiGetCallbackName)
  DLPT_CUPTI_FN(cuptiGetResultString)
  DLPT_CUPTI_FN(cuptiGetTimestamp)
  DLPT_CUPTI_FN(cuptiActivityRegisterCallbacks)
  DLPT_CUPTI_FN(cuptiActivityEnable)
  DLPT_CUPTI_FN(cuptiActivityDisable)
  DLPT_CUPTI_FN(cuptiActivityFlushAll)
  DLPT_CUPTI_FN(cuptiActivityGetNextRecord)
  DLPT_CUPTI_FN(cuptiActivityGetNumDroppedRecords)
  DLPT_CUPTI_FN(cuptiGetGraphNodeId)
#undef DLPT_CUPTI_FN
  // Optional: the worker thread's flush period (CUDA 11.1+).
  decltype(&::cuptiActivityFlushPeriod) cuptiActivityFlushPeriod = nullptr;
  // Optional (CUDA 13+): tells who already holds the subscriber slot.
  decltype(&::cuptiSubscribe_v2) cuptiSubscribe_v2 = nullptr;
  // Optional: detaches CUPTI from the process (see stop_gpu_tracing).
  decltype(&::cuptiFinalize) cuptiFinalize = nullptr;

  std::string path;  // the library actually used

  const char* error_string(CUptiResult r) const;
};

/// [GIL] Loads CUPTI once: an already loaded libcupti (torch's), then each of `candidates` (an
/// environment override and the paths Python found) in order. On failure returns nullptr and
/// sets `error` to what was tried and why it failed.
const CuptiApi* load_cupti(const std::vector<std::string>& candidates, std::string* error);

}  // namespace dlpt
