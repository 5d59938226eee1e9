#include "collector.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "cubins.h"

namespace dlpt::pcsampling {

namespace {

/// One configured context. The buffers live as long as the configuration: CUPTI keeps pointers
/// to the stall reason indices and to the sampling data buffer.
struct ContextConfig {
  CUcontext ctx = nullptr;
  std::vector<uint32_t> reason_index;
  std::vector<std::string> reason_name;
  std::unordered_map<uint32_t, size_t> reason_slot;  // CUPTI's reason index -> position
  CUpti_PCSamplingData data{};
  std::vector<CUpti_PCSamplingPCData> pcs;
  std::vector<std::vector<CUpti_PCSamplingStallReason>> pc_reasons;
  // Kept as long as the configuration, as Proton does: CUPTI may read it after the call.
  std::vector<CUpti_PCSamplingConfigurationInfo> info;
  bool sampling = false;
};

std::vector<std::unique_ptr<ContextConfig>> g_contexts;
ContextConfig* g_running = nullptr;  // the context sampling was started on

bool call(const PcApi& api, CUptiResult r, const char* what, std::vector<std::string>* log, std::string* error) {
  const std::string line = std::string(what) + ": " + (r == CUPTI_SUCCESS ? "ok" : api.error(r));
  if (log) log->push_back(line);
  if (r != CUPTI_SUCCESS && error) *error = line;
  return r == CUPTI_SUCCESS;
}

/// The short name of a CUPTI stall reason: "smsp__pcsamp_warps_issue_stalled_long_scoreboard"
/// -> "long_scoreboard" (the "_not_issued" variants keep that suffix).
std::string short_reason(const std::string& name) {
  for (const char* prefix : {"smsp__pcsamp_warps_issue_stalled_", "smsp__pcsamp_"}) {
    const std::string p = prefix;
    if (name.compare(0, p.size(), p) == 0) return name.substr(p.size());
  }
  return name;
}

bool read_reasons(const PcApi& api, CUcontext ctx, ContextConfig* c, std::vector<std::string>* log,
                  std::string* error) {
  size_t n = 0;
  CUpti_PCSamplingGetNumStallReasonsParams np{};
  np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
  np.ctx = ctx;
  np.numStallReasons = &n;
  if (!call(api, api.cuptiPCSamplingGetNumStallReasons(&np), "cuptiPCSamplingGetNumStallReasons", log, error))
    return false;
  if (log) log->push_back("stall reasons: " + std::to_string(n));
  std::vector<std::vector<char>> storage(n, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE, 0));
  std::vector<char*> names(n);
  for (size_t i = 0; i < n; ++i) names[i] = storage[i].data();
  c->reason_index.assign(n, 0);
  CUpti_PCSamplingGetStallReasonsParams sp{};
  sp.size = CUpti_PCSamplingGetStallReasonsParamsSize;
  sp.ctx = ctx;
  sp.numStallReasons = n;
  sp.stallReasonIndex = c->reason_index.data();
  sp.stallReasons = names.data();
  if (!call(api, api.cuptiPCSamplingGetStallReasons(&sp), "cuptiPCSamplingGetStallReasons", log, error)) return false;
  c->reason_name.clear();
  for (size_t i = 0; i < n; ++i) {
    storage[i].back() = '\0';
    c->reason_name.push_back(short_reason(storage[i].data()));
    c->reason_slot[c->reason_index[i]] = i;
  }
  return true;
}

bool configure(const PcApi& api, const Settings& s, ContextConfig* c, std::vector<std::string>* log,
               std::string* error) {
  const size_t reasons = c->reason_index.size();
  c->pcs.assign(s.pcs_per_read, CUpti_PCSamplingPCData{});
  c->pc_reasons.assign(s.pcs_per_read, std::vector<CUpti_PCSamplingStallReason>(reasons));
  for (size_t i = 0; i < s.pcs_per_read; ++i) {
    c->pcs[i].size = sizeof(CUpti_PCSamplingPCData);
    c->pcs[i].stallReason = c->pc_reasons[i].data();
  }
  c->data = CUpti_PCSamplingData{};
  c->data.size = sizeof(CUpti_PCSamplingData);
  c->data.collectNumPcs = s.pcs_per_read;
  c->data.pPcData = c->pcs.data();

  std::vector<CUpti_PCSamplingConfigurationInfo>& info = c->info;
  info.assign(7, CUpti_PCSamplingConfigurationInfo{});
  info[0].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
  info[0].attributeData.stallReasonData.stallReasonCount = reasons;
  info[0].attributeData.stallReasonData.pStallReasonIndex = c->reason_index.data();
  info[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
  info[1].attributeData.samplingPeriodData.samplingPeriod = s.period_log2;
  info[2].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE;
  info[2].attributeData.hardwareBufferSizeData.hardwareBufferSize = s.hardware_buffer;
  info[3].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE;
  info[3].attributeData.scratchBufferSizeData.scratchBufferSize = s.scratch_buffer;
  info[4].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
  info[4].attributeData.samplingDataBufferData.samplingDataBuffer = &c->data;
  info[5].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
  info[5].attributeData.enableStartStopControlData.enableStartStopControl = 1;
  info[6].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
  info[6].attributeData.collectionModeData.collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
  CUpti_PCSamplingConfigurationInfoParams p{};
  p.size = CUpti_PCSamplingConfigurationInfoParamsSize;
  p.ctx = c->ctx;
  p.numAttributes = info.size();
  p.pPCSamplingConfigurationInfo = info.data();
  if (log)
    log->push_back("sampling period 2^" + std::to_string(s.period_log2) + " cycles, hardware buffer " +
                   std::to_string(s.hardware_buffer >> 20) + " MiB, continuous mode");
  const bool ok = call(api, api.cuptiPCSamplingSetConfigurationAttribute(&p),
                       "cuptiPCSamplingSetConfigurationAttribute", log, error);
  if (!ok && log) {  // which attribute CUPTI refused (the others say CUPTI_SUCCESS)
    for (const auto& i : info)
      log->push_back("  attribute " + std::to_string(static_cast<int>(i.attributeType)) + ": " +
                     api.error(i.attributeStatus));
  }
  return ok;
}

bool current_context(const PcApi& api, CUcontext* ctx, std::vector<std::string>* log, std::string* error) {
  std::string why;
  if (current_cuda_context(ctx, &why)) return true;
  if (log) log->push_back("cuCtxGetCurrent: " + why);
  if (error) *error = why;
  return false;
}

ContextConfig* config_for(const PcApi& api, const Settings& s, CUcontext ctx, std::vector<std::string>* log,
                          std::string* error) {
  for (auto& c : g_contexts) {
    if (c->ctx == ctx) return c.get();
  }
  auto c = std::make_unique<ContextConfig>();
  c->ctx = ctx;
  CUpti_PCSamplingEnableParams ep{};
  ep.size = CUpti_PCSamplingEnableParamsSize;
  ep.ctx = ctx;
  if (!call(api, api.cuptiPCSamplingEnable(&ep), "cuptiPCSamplingEnable", log, error)) return nullptr;
  if (!read_reasons(api, ctx, c.get(), log, error) || !configure(api, s, c.get(), log, error)) {
    CUpti_PCSamplingDisableParams dp{};
    dp.size = CUpti_PCSamplingDisableParamsSize;
    dp.ctx = ctx;
    api.cuptiPCSamplingDisable(&dp);
    return nullptr;
  }
  g_contexts.push_back(std::move(c));
  return g_contexts.back().get();
}

using LineKey = std::tuple<std::string, std::string, uint32_t>;  // function, file, line

/// Adds the records now in c->data to `acc`, then marks them consumed.
void take_records(const PcApi& api, ContextConfig* c, std::map<LineKey, LineSamples>* acc, Collected* out) {
  CubinStore& store = cubin_store();
  for (size_t i = 0; i < c->data.totalNumPcs && i < c->pcs.size(); ++i) {
    const CUpti_PCSamplingPCData& pc = c->pcs[i];
    const char* fn = pc.functionName ? pc.functionName : "";
    ++out->pcs;
    if (!store.has(pc.cubinCrc)) ++out->pcs_without_cubin;
    const SourceLine where = store.resolve(api, pc.cubinCrc, pc.functionName, pc.pcOffset);
    if (!where.file.empty()) {
      ++out->pcs_resolved;
    } else if (out->unresolved.size() < 64 && !where.why.empty()) {
      out->unresolved.emplace(fn, where.why);
    }
    LineKey key{fn, where.file, where.line};
    LineSamples& ls = (*acc)[key];
    if (ls.function.empty()) {
      ls.function = fn;
      ls.file = where.file;
      ls.line = where.line;
      ls.stalls.reserve(c->reason_name.size());
      for (const std::string& name : c->reason_name) ls.stalls.emplace_back(name, 0);
    }
    for (size_t j = 0; j < pc.stallReasonCount && j < c->pc_reasons[i].size(); ++j) {
      const CUpti_PCSamplingStallReason& r = pc.stallReason[j];
      auto slot = c->reason_slot.find(r.pcSamplingStallReasonIndex);
      if (slot == c->reason_slot.end()) continue;
      ls.stalls[slot->second].second += r.samples;
      ls.samples += r.samples;
    }
  }
  out->total_samples += c->data.totalSamples;
  out->dropped_samples += c->data.droppedSamples;
  out->non_user_samples += c->data.nonUsrKernelsTotalSamples;
  out->hardware_buffer_full |= c->data.hardwareBufferFull != 0;
  c->data.totalNumPcs = 0;  // consumed: a later read must not count these again
  c->data.totalSamples = c->data.droppedSamples = c->data.nonUsrKernelsTotalSamples = 0;
}

}  // namespace

bool start(const PcApi& api, const Settings& settings, std::vector<std::string>* log, std::string* error) {
  if (g_running != nullptr) return true;
  CUcontext ctx = nullptr;
  if (!current_context(api, &ctx, log, error)) return false;
  ContextConfig* c = config_for(api, settings, ctx, log, error);
  if (c == nullptr) return false;
  CUpti_PCSamplingStartParams p{};
  p.size = CUpti_PCSamplingStartParamsSize;
  p.ctx = ctx;
  if (!call(api, api.cuptiPCSamplingStart(&p), "cuptiPCSamplingStart", log, error)) return false;
  c->sampling = true;
  g_running = c;
  return true;
}

bool stop(const PcApi& api, Collected* out, std::vector<std::string>* log, std::string* error) {
  ContextConfig* c = g_running;
  if (c == nullptr) {
    if (error) *error = "PC sampling was not started";
    return false;
  }
  g_running = nullptr;
  c->sampling = false;
  CUpti_PCSamplingStopParams p{};
  p.size = CUpti_PCSamplingStopParamsSize;
  p.ctx = c->ctx;
  if (!call(api, api.cuptiPCSamplingStop(&p), "cuptiPCSamplingStop", log, error)) return false;
  std::map<LineKey, LineSamples> acc;
  // The buffer given at configuration may already hold records (CUPTI fills it when a range
  // ends); then each read brings up to pcs_per_read more, until none remain.
  take_records(api, c, &acc, out);
  int reads = 0;
  for (; reads < 100000; ++reads) {
    CUpti_PCSamplingGetDataParams gp{};
    gp.size = CUpti_PCSamplingGetDataParamsSize;
    gp.ctx = c->ctx;
    gp.pcSamplingData = &c->data;
    const CUptiResult r = api.cuptiPCSamplingGetData(&gp);
    if (r != CUPTI_SUCCESS) {
      call(api, r, "cuptiPCSamplingGetData", log, error);
      break;
    }
    const size_t remaining = c->data.remainingNumPcs;
    take_records(api, c, &acc, out);
    if (remaining == 0) break;
  }
  if (log) log->push_back("cuptiPCSamplingGetData reads: " + std::to_string(reads + 1));
  out->lines.reserve(acc.size());
  for (auto& [key, ls] : acc) out->lines.push_back(std::move(ls));
  return true;
}

void disable_all(const PcApi& api, std::vector<std::string>* log) {
  if (g_running != nullptr) {
    Collected ignored;
    stop(api, &ignored, log, nullptr);
  }
  for (auto& c : g_contexts) {
    CUpti_PCSamplingDisableParams p{};
    p.size = CUpti_PCSamplingDisableParamsSize;
    p.ctx = c->ctx;
    call(api, api.cuptiPCSamplingDisable(&p), "cuptiPCSamplingDisable", log, nullptr);
  }
  g_contexts.clear();
}

std::vector<std::string> stall_reason_names(const PcApi& api, std::vector<std::string>* log, std::string* error) {
  CUcontext ctx = nullptr;
  if (!current_context(api, &ctx, log, error)) return {};
  for (auto& c : g_contexts) {
    if (c->ctx == ctx) return c->reason_name;
  }
  ContextConfig probe;
  if (!read_reasons(api, ctx, &probe, log, error)) return {};
  return probe.reason_name;
}

}  // namespace dlpt::pcsampling
