#pragma once
/// Clocks, temperature and power of one GPU while it is measured, read through NVML.
///
/// The CUDA 13 toolkit on the build machines ships no nvml.h, so NVML is not linked: the
/// driver's own libnvidia-ml.so.1 (present wherever an NVIDIA driver is) is opened at run time
/// and the few stable C entry points used here are declared locally (NVML API reference:
/// nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2, nvmlDeviceGetClockInfo, nvmlDeviceGetTemperature,
/// nvmlDeviceGetPowerUsage, nvmlDeviceGetCurrentClocksEventReasons). No nvidia-smi process is
/// started. Where the library is missing, readings are NaN and status() says why, so the raw
/// file records that clocks were not observed instead of inventing them.

#include <cstdint>
#include <limits>
#include <string>

namespace twin::calib {

struct GpuReading {
  double sm_clock_MHz = std::numeric_limits<double>::quiet_NaN();
  double mem_clock_MHz = std::numeric_limits<double>::quiet_NaN();
  double temperature_C = std::numeric_limits<double>::quiet_NaN();
  double power_W = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t clock_event_reasons = 0;  ///< NVML's throttle / clock-event bit mask
};

class GpuMonitor {
 public:
  /// `pci_bus_id` as cudaDeviceGetPCIBusId gives it ("0000:18:00.0"). Never throws.
  explicit GpuMonitor(const std::string& pci_bus_id,
                      const std::string& library = "libnvidia-ml.so.1");
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  [[nodiscard]] bool available() const { return device_ != nullptr; }
  /// "NVML (libnvidia-ml.so.1)" or "not recorded: <reason>".
  [[nodiscard]] const std::string& status() const { return status_; }
  [[nodiscard]] GpuReading read() const;

 private:
  void* library_ = nullptr;
  void* device_ = nullptr;
  std::string status_;
  int (*clock_)(void*, int, unsigned*) = nullptr;
  int (*temperature_)(void*, int, unsigned*) = nullptr;
  int (*power_)(void*, unsigned*) = nullptr;
  int (*reasons_)(void*, unsigned long long*) = nullptr;
  int (*shutdown_)() = nullptr;
};

/// Running summary of readings taken while one shape runs: mean SM clock and power, lowest SM
/// clock, highest temperature, OR of the clock-event reasons.
struct ReadingSummary {
  int samples = 0;
  double sm_clock_sum = 0, power_sum = 0;
  GpuReading low_high;  ///< sm_clock_MHz = lowest, temperature_C = highest
  void add(const GpuReading& r);
  [[nodiscard]] double mean_sm_clock_MHz() const;
  [[nodiscard]] double mean_power_W() const;
};

}  // namespace twin::calib
