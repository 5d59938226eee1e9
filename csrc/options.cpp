#include "options.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace dlpt {

namespace {
/// A set flag: present, not empty and not "0".
bool flag(const char* env) { return env != nullptr && *env && std::strcmp(env, "0") != 0; }

Floor parse_floor(const char* env) {
  if (env == nullptr || !*env || std::strcmp(env, "0") == 0 || std::strcmp(env, "none") == 0) return Floor::None;
  if (std::strcmp(env, "1") == 0 || std::strcmp(env, "op_callback") == 0) return Floor::OpCallback;
  if (std::strcmp(env, "2") == 0 || std::strcmp(env, "cupti") == 0) return Floor::Cupti;
  throw std::invalid_argument(std::string("DLPT_FLOOR must be op_callback or cupti, not '") + env + "'");
}

SuspendMode parse_suspend(const char* env) {
  if (env == nullptr || !*env || std::strcmp(env, "disable") == 0) return SuspendMode::Disable;
  if (std::strcmp(env, "detach") == 0) return SuspendMode::Detach;
  throw std::invalid_argument(std::string("DLPT_SUSPEND must be disable or detach, not '") + env + "'");
}
}  // namespace

BenchSwitches read_bench_switches() {
  BenchSwitches b;
  b.floor = parse_floor(std::getenv("DLPT_FLOOR"));
  if (const char* env = std::getenv("DLPT_CUPTI_EXPERIMENT")) {
    const std::string exp = env;
    const auto has = [&](const char* name) { return exp.find(name) != std::string::npos; };
    b.cupti.kernel_only = has("kernel_only");
    b.cupti.launch_only = has("launch_only");
    b.cupti.no_flush_period = has("no_flush_period");
    b.cupti.big_buffers = has("big_buffers");
    // What each half of CUPTI costs: meaningful in the CUPTI floor only, where nothing is
    // recorded anyway (real capture without callbacks or activity would lose data).
    b.cupti.no_callbacks = b.floor == Floor::Cupti && has("no_callbacks");
    b.cupti.no_activity = b.floor == Floor::Cupti && has("no_activity");
  }
  if (const char* env = std::getenv("DLPT_WINDOW_MIN_NESTED"))
    b.window_min_nested = static_cast<uint32_t>(std::strtoul(env, nullptr, 10));
  b.keep_cupti = flag(std::getenv("DLPT_KEEP_CUPTI"));
  b.suspend = parse_suspend(std::getenv("DLPT_SUSPEND"));
  if (const char* env = std::getenv("DLPT_OP_MEMO")) b.op_memo = std::strcmp(env, "0") != 0;  // only 0 turns it off
  if (const char* env = std::getenv("DLPT_ANCHOR_MIN_INNER"))
    b.anchor_min_inner = static_cast<uint32_t>(std::strtoul(env, nullptr, 10));
  if (const char* env = std::getenv("DLPT_SAMPLER_LAG_US"))
    b.sampler_lag_us = static_cast<uint32_t>(std::strtoul(env, nullptr, 10));
  return b;
}

}  // namespace dlpt
