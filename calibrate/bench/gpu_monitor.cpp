#include "calibrate/bench/gpu_monitor.hpp"

#include <dlfcn.h>

#include <cmath>

namespace twin::calib {
namespace {

// NVML constants (nvml.h, stable since NVML 2.x): NVML_SUCCESS, NVML_CLOCK_SM, NVML_CLOCK_MEM,
// NVML_TEMPERATURE_GPU.
constexpr int kNvmlSuccess = 0;
constexpr int kClockSm = 1;
constexpr int kClockMem = 2;
constexpr int kTemperatureGpu = 0;

template <typename F>
F symbol(void* library, const char* name) {
  return reinterpret_cast<F>(dlsym(library, name));
}

}  // namespace

GpuMonitor::GpuMonitor(const std::string& pci_bus_id, const std::string& library) {
  library_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    status_ = "not recorded: " + library + " not found (no NVIDIA driver library)";
    return;
  }
  auto init = symbol<int (*)()>(library_, "nvmlInit_v2");
  auto by_bus = symbol<int (*)(const char*, void**)>(library_, "nvmlDeviceGetHandleByPciBusId_v2");
  shutdown_ = symbol<int (*)()>(library_, "nvmlShutdown");
  clock_ = symbol<int (*)(void*, int, unsigned*)>(library_, "nvmlDeviceGetClockInfo");
  temperature_ = symbol<int (*)(void*, int, unsigned*)>(library_, "nvmlDeviceGetTemperature");
  power_ = symbol<int (*)(void*, unsigned*)>(library_, "nvmlDeviceGetPowerUsage");
  reasons_ = symbol<int (*)(void*, unsigned long long*)>(library_,
                                                         "nvmlDeviceGetCurrentClocksEventReasons");
  if (reasons_ == nullptr)
    reasons_ = symbol<int (*)(void*, unsigned long long*)>(
        library_, "nvmlDeviceGetCurrentClocksThrottleReasons");
  if (init == nullptr || by_bus == nullptr || shutdown_ == nullptr || clock_ == nullptr ||
      temperature_ == nullptr) {
    status_ = "not recorded: " + library + " lacks the NVML entry points used";
    return;
  }
  if (init() != kNvmlSuccess) {
    status_ = "not recorded: nvmlInit failed";
    shutdown_ = nullptr;
    return;
  }
  void* device = nullptr;
  if (by_bus(pci_bus_id.c_str(), &device) != kNvmlSuccess || device == nullptr) {
    status_ = "not recorded: NVML does not know PCI device " + pci_bus_id;
    return;
  }
  device_ = device;
  status_ = "NVML (" + library + ")";
}

GpuMonitor::~GpuMonitor() {
  if (shutdown_ != nullptr) shutdown_();
  if (library_ != nullptr) dlclose(library_);
}

GpuReading GpuMonitor::read() const {
  GpuReading r;
  if (device_ == nullptr) return r;
  unsigned value = 0;
  if (clock_(device_, kClockSm, &value) == kNvmlSuccess) r.sm_clock_MHz = value;
  if (clock_(device_, kClockMem, &value) == kNvmlSuccess) r.mem_clock_MHz = value;
  if (temperature_(device_, kTemperatureGpu, &value) == kNvmlSuccess) r.temperature_C = value;
  if (power_ != nullptr && power_(device_, &value) == kNvmlSuccess) r.power_W = value / 1000.0;
  unsigned long long reasons = 0;
  if (reasons_ != nullptr && reasons_(device_, &reasons) == kNvmlSuccess)
    r.clock_event_reasons = reasons;
  return r;
}

void ReadingSummary::add(const GpuReading& r) {
  if (std::isnan(r.sm_clock_MHz)) return;
  ++samples;
  sm_clock_sum += r.sm_clock_MHz;
  power_sum += std::isnan(r.power_W) ? 0.0 : r.power_W;
  if (std::isnan(low_high.sm_clock_MHz) || r.sm_clock_MHz < low_high.sm_clock_MHz)
    low_high.sm_clock_MHz = r.sm_clock_MHz;
  if (std::isnan(low_high.temperature_C) || r.temperature_C > low_high.temperature_C)
    low_high.temperature_C = r.temperature_C;
  low_high.mem_clock_MHz = r.mem_clock_MHz;
  low_high.clock_event_reasons |= r.clock_event_reasons;
}

double ReadingSummary::mean_sm_clock_MHz() const {
  return samples > 0 ? sm_clock_sum / samples : std::numeric_limits<double>::quiet_NaN();
}

double ReadingSummary::mean_power_W() const {
  return samples > 0 ? power_sum / samples : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace twin::calib
