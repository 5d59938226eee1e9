#include "modules.h"

#include <atomic>

#include "../cupti/tracer.h"
#include "api.h"
#include "cubins.h"

namespace dlpt::pcsampling {

namespace {

std::atomic<const PcApi*> g_watching{nullptr};
CUpti_SubscriberHandle g_own = nullptr;  // our own subscriber, when the tracer holds none

void CUPTIAPI own_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) on_module_loaded(data);
}

}  // namespace

void on_module_loaded(const void* resource_data) {
  const PcApi* api = g_watching.load(std::memory_order_acquire);
  const auto* rd = static_cast<const CUpti_ResourceData*>(resource_data);
  if (api == nullptr || rd == nullptr || rd->resourceDescriptor == nullptr) return;
  const auto* mod = static_cast<const CUpti_ModuleResourceData*>(rd->resourceDescriptor);
  cubin_store().add(*api, mod->pCubin, mod->cubinSize);
}

bool watch_modules(const std::vector<std::string>& candidates, std::string* how, std::string* error) {
  const PcApi* api = pc_api(candidates, error);
  if (api == nullptr) return false;
  g_watching.store(api, std::memory_order_release);
  // Each profile's tracer subscribes afresh (and forgets the callback at its start): asked every
  // time. The store of cubins is the process's, kept across profiles.
  std::string tracer_error;
  if (watch_module_loads(&tracer_error)) {
    if (how) *how = "tracer subscriber";
    return true;
  }
  if (g_own != nullptr) {
    if (how) *how = "own subscriber";
    return true;
  }
  CUptiResult r = api->cuptiSubscribe(&g_own, own_callback, nullptr);
  if (r == CUPTI_SUCCESS)
    r = api->cuptiEnableCallback(1, g_own, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
  if (r != CUPTI_SUCCESS) {
    g_watching.store(nullptr);
    if (error) *error = "cannot watch module loads: " + api->error(r) + " (another profiler may hold CUPTI)";
    return false;
  }
  if (how) *how = "own subscriber";
  return true;
}

}  // namespace dlpt::pcsampling
