// The CUPTI PC Sampling entry points, resolved lazily from the CUPTI that csrc/cupti/loader.cpp
// already loaded: an older CUPTI without them (or without the 12.4 record layout) leaves PC
// sampling off with a one-line reason; the normal tracer never depends on them.
#pragma once

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <string>
#include <vector>

namespace dlpt::pcsampling {

struct PcApi {
#define DLPT_PCS_FN(name) decltype(&::name) name = nullptr;
  DLPT_PCS_FN(cuptiGetVersion)
  DLPT_PCS_FN(cuptiGetResultString)
  DLPT_PCS_FN(cuptiSubscribe)
  DLPT_PCS_FN(cuptiEnableCallback)
  DLPT_PCS_FN(cuptiPCSamplingGetNumStallReasons)
  DLPT_PCS_FN(cuptiPCSamplingGetStallReasons)
  DLPT_PCS_FN(cuptiPCSamplingSetConfigurationAttribute)
  DLPT_PCS_FN(cuptiPCSamplingEnable)
  DLPT_PCS_FN(cuptiPCSamplingDisable)
  DLPT_PCS_FN(cuptiPCSamplingStart)
  DLPT_PCS_FN(cuptiPCSamplingStop)
  DLPT_PCS_FN(cuptiPCSamplingGetData)
  DLPT_PCS_FN(cuptiGetSassToSourceCorrelation)
  DLPT_PCS_FN(cuptiGetCubinCrc)
#undef DLPT_PCS_FN
  uint32_t version = 0;  // cuptiGetVersion (CUPTI_API_VERSION of the loaded library)
  std::string cupti_path;

  /// "CUPTI_ERROR_... (text)" for `r`.
  std::string error(CUptiResult r) const;
};

/// [GIL] The entry points, resolved on first use from the CUPTI dlpt loaded (`candidates` as for
/// start(): torch's copy first). nullptr with `reason` (one line) when CUPTI or any entry point
/// is missing, or its PC record layout is not the one dlpt was built for (CUDA 12.4+).
const PcApi* pc_api(const std::vector<std::string>& candidates, std::string* reason);

/// [GIL] The CUDA context current on the calling thread, through the driver torch loaded
/// (looked up on first use: the driver is loaded only once CUDA is initialised). False with
/// `error` when the driver is not loaded or no context is current.
bool current_cuda_context(CUcontext* ctx, std::string* error);

}  // namespace dlpt::pcsampling
