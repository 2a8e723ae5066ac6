// GEMM throughput with cuBLASLt by the maximum-achievable-matmul method (S. Bekman,
// ml-engineering, "mamf-finder"), and the HBM copy sweep.
//
// GEMM: random inputs (all-zero operands draw less power and throttle less: published 295 vs
// 257 TFLOP/s for zeros vs random on one GPU), a sustained warm-up so clocks reach their
// thermal steady state before the first timed shape, then per shape --gemm-warmup untimed and
// --gemm-iters timed calls, each timed call preceded by writing a buffer of twice the L2 size
// (so no operand is served from L2) and timed alone between two events; the median call is
// reported. SM clock, temperature and power are sampled while the shape runs (NVML, see
// gpu_monitor.hpp) and stored beside it.
//
// HBM: copies whose working set (source + destination) is kHbmMinWorkingSetOverL2 x L2 and
// more, doubling up to 4 GiB per buffer (1 GiB with --quick; at least three sizes), within a
// quarter of free memory. Bandwidth counts read + write.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include "calibrate/bench/calib.hpp"
#include "calibrate/bench/kernels.hpp"
#include "core/stats.hpp"

namespace twin::calib {
namespace {

void check_lt(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format("{}: cuBLAS status {}", what, static_cast<int>(status)));
}

struct Shape {
  long m, n, k;
};

/// Transformer GEMMs for hidden size h and 8,192 tokens (QKV, attention output, MLP up and
/// down), plus square and ragged shapes that expose tile quantization.
std::vector<Shape> shapes(bool quick) {
  std::vector<Shape> out;
  const long tokens = 8192;
  for (long h :
       quick ? std::vector<long>{4096} : std::vector<long>{2048, 4096, 8192, 12288, 16384}) {
    out.push_back({tokens, 3 * h, h});
    out.push_back({tokens, h, h});
    out.push_back({tokens, 4 * h, h});
    out.push_back({tokens, h, 4 * h});
  }
  for (long d : quick ? std::vector<long>{1024, 8192}
                      : std::vector<long>{256, 512, 1024, 2048, 4096, 8192, 16384})
    out.push_back({d, d, d});
  if (!quick)
    for (long d : {1000L, 4000L, 8200L}) out.push_back({d, d, d});
  return out;
}

/// Device memory freed on scope exit (also when a measurement throws).
struct DeviceBuffer {
  void* ptr = nullptr;
  DeviceBuffer(std::size_t bytes, const char* what) { check_cuda(cudaMalloc(&ptr, bytes), what); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct Events {
  std::vector<cudaEvent_t> events;
  explicit Events(int count) {
    events.resize(static_cast<std::size_t>(count), nullptr);
    for (auto& e : events) check_cuda(cudaEventCreate(&e), "cudaEventCreate");
  }
  ~Events() {
    for (auto e : events)
      if (e != nullptr) cudaEventDestroy(e);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
};

/// One configured cuBLASLt matmul (descriptors and the heuristic's first algorithm).
class Matmul {
 public:
  Matmul(cublasLtHandle_t lt, const Shape& s, cudaDataType_t ab_type, std::size_t workspace_bytes)
      : lt_(lt), workspace_bytes_(workspace_bytes) {
    check_lt(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul desc");
    // Row-major C[m,n] = A[m,k] B[k,n] as column-major C^T = B^T A^T; FP8 needs "TN".
    const bool fp8 = ab_type == CUDA_R_8F_E4M3;
    const cublasOperation_t transa = fp8 ? CUBLAS_OP_T : CUBLAS_OP_N, transb = CUBLAS_OP_N;
    check_lt(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa),
        "matmul transa");
    check_lt(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb),
        "matmul transb");
    const auto u = [](long v) { return static_cast<uint64_t>(v); };
    check_lt(cublasLtMatrixLayoutCreate(&la_, ab_type, u(fp8 ? s.k : s.n), u(fp8 ? s.n : s.k),
                                        fp8 ? s.k : s.n),
             "layout A");
    check_lt(cublasLtMatrixLayoutCreate(&lb_, ab_type, u(s.k), u(s.m), s.k), "layout B");
    check_lt(cublasLtMatrixLayoutCreate(&lc_, CUDA_R_16BF, u(s.n), u(s.m), s.n), "layout C");
    check_lt(cublasLtMatmulPreferenceCreate(&pref_), "matmul preference");
    check_lt(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &workspace_bytes_, sizeof workspace_bytes_),
             "matmul workspace preference");
    int found = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(lt_, op_, la_, lb_, lc_, lc_, pref_, 1, &heuristic_, &found);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED) return;  // no algorithm for this GPU/type
    check_lt(status, "matmul heuristic");
    if (found > 0) check_lt(heuristic_.state, "matmul heuristic result");
    found_ = found > 0;
  }
  ~Matmul() {
    if (pref_ != nullptr) cublasLtMatmulPreferenceDestroy(pref_);
    if (la_ != nullptr) cublasLtMatrixLayoutDestroy(la_);
    if (lb_ != nullptr) cublasLtMatrixLayoutDestroy(lb_);
    if (lc_ != nullptr) cublasLtMatrixLayoutDestroy(lc_);
    if (op_ != nullptr) cublasLtMatmulDescDestroy(op_);
  }
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  [[nodiscard]] bool found() const { return found_; }
  void run(const void* a, const void* b, void* d, void* workspace, cudaStream_t stream) const {
    const float alpha = 1.0f, beta = 0.0f;
    check_lt(cublasLtMatmul(lt_, op_, &alpha, a, la_, b, lb_, &beta, d, lc_, d, lc_,
                            &heuristic_.algo, workspace, workspace_bytes_, stream),
             "cublasLtMatmul");
  }

 private:
  cublasLtHandle_t lt_;
  std::size_t workspace_bytes_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
  bool found_ = false;
};

double gemm_flops(const Shape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
}

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

struct Context {
  cublasLtHandle_t lt = nullptr;
  cudaStream_t stream = nullptr;
  void *a = nullptr, *b = nullptr, *d = nullptr, *workspace = nullptr, *flush = nullptr;
  std::size_t workspace_bytes = 0, flush_bytes = 0;
  const Options* options = nullptr;
  const GpuMonitor* monitor = nullptr;
};

/// Runs `matmul` back to back for `seconds` of wall time (the sustained warm-up).
void sustain(const Context& c, const Matmul& matmul, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  while (elapsed() < seconds) {
    for (int i = 0; i < 20; ++i) matmul.run(c.a, c.b, c.d, c.workspace, c.stream);
    wait_stream(c.stream, c.options->timeout_s, "GEMM warm-up");
  }
}

/// Median microseconds per call of one shape, with the readings taken while it ran.
double time_shape(const Context& c, const Matmul& matmul, ReadingSummary& readings) {
  const Options& o = *c.options;
  for (int i = 0; i < o.gemm_warmup; ++i) {
    check_cuda(cudaMemsetAsync(c.flush, i & 0xff, c.flush_bytes, c.stream), "L2 flush");
    matmul.run(c.a, c.b, c.d, c.workspace, c.stream);
  }
  Events events(2 * o.gemm_iters);
  for (int i = 0; i < o.gemm_iters; ++i) {
    check_cuda(cudaMemsetAsync(c.flush, i & 0xff, c.flush_bytes, c.stream), "L2 flush");
    check_cuda(cudaEventRecord(events.events[2 * static_cast<std::size_t>(i)], c.stream),
               "cudaEventRecord");
    matmul.run(c.a, c.b, c.d, c.workspace, c.stream);
    check_cuda(cudaEventRecord(events.events[2 * static_cast<std::size_t>(i) + 1], c.stream),
               "cudaEventRecord");
  }
  cudaEvent_t last = events.events.back();
  wait_until(
      [&] {
        const cudaError_t status = cudaEventQuery(last);
        if (status == cudaErrorNotReady) return false;
        check_cuda(status, "GEMM timed calls");
        return true;
      },
      o.timeout_s, "GEMM timed calls",
      [&] {
        readings.add(c.monitor->read());
        sleep_ms(20);
      });
  if (readings.samples == 0) readings.add(c.monitor->read());
  std::vector<double> us;
  for (int i = 0; i < o.gemm_iters; ++i) {
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, events.events[2 * static_cast<std::size_t>(i)],
                                    events.events[2 * static_cast<std::size_t>(i) + 1]),
               "cudaEventElapsedTime");
    us.push_back(1e3 * ms);
  }
  return core::median(us);
}

std::string reading_text(const GpuReading& r) {
  if (std::isnan(r.sm_clock_MHz)) return "clocks not recorded";
  return fmt::format("SM {:.0f} MHz, {:.0f} C, {:.0f} W", r.sm_clock_MHz, r.temperature_C,
                     r.power_W);
}

}  // namespace

std::map<std::string, std::vector<calibrate::GemmSample>> run_gemm(const Options& options,
                                                                   const GpuMonitor& monitor) {
  const auto list = shapes(options.quick);
  long max_elems = 0;
  for (const auto& s : list) max_elems = std::max({max_elems, s.m * s.k, s.k * s.n, s.m * s.n});
  const std::size_t elems = static_cast<std::size_t>(max_elems);
  int device = 0, major = 0, minor = 0, l2 = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cc");
  check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "cc");
  check_cuda(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "L2 size");

  Context c;
  c.options = &options;
  c.monitor = &monitor;
  c.workspace_bytes = 64ull << 20;
  c.flush_bytes = 2 * static_cast<std::size_t>(std::max(l2, 1 << 20));
  DeviceBuffer a(elems * 2, "cudaMalloc A"), b(elems * 2, "cudaMalloc B"),
      d(elems * 2, "cudaMalloc D"), workspace(c.workspace_bytes, "cudaMalloc workspace"),
      flush(c.flush_bytes, "cudaMalloc L2 flush buffer");
  c.a = a.ptr;
  c.b = b.ptr;
  c.d = d.ptr;
  c.workspace = workspace.ptr;
  c.flush = flush.ptr;
  check_cuda(cudaStreamCreate(&c.stream), "cudaStreamCreate");
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() { cudaStreamDestroy(s); }
  } stream_guard{c.stream};
  check_lt(cublasLtCreate(&c.lt), "cublasLtCreate");
  struct LtGuard {
    cublasLtHandle_t lt;
    ~LtGuard() { cublasLtDestroy(lt); }
  } lt_guard{c.lt};

  std::vector<std::pair<std::string, cudaDataType_t>> dtypes = {{"bf16", CUDA_R_16BF}};
  if (major * 10 + minor >= 89) dtypes.emplace_back("fp8", CUDA_R_8F_E4M3);

  std::map<std::string, std::vector<calibrate::GemmSample>> out;
  bool warmed = false;
  for (const auto& [name, type] : dtypes) {
    if (type == CUDA_R_16BF) {
      fill_random_bf16(c.a, elems, 1, c.stream);
      fill_random_bf16(c.b, elems, 2, c.stream);
    } else {
      fill_random_fp8(c.a, elems, 1, c.stream);
      fill_random_fp8(c.b, elems, 2, c.stream);
    }
    wait_stream(c.stream, options.timeout_s, "GEMM input fill");
    if (!warmed) {
      const Matmul load(c.lt, {8192, 8192, 8192}, type, c.workspace_bytes);
      if (load.found()) {
        fmt::print("  gemm: {:.0f} s sustained warm-up ({} before)\n", options.gemm_warmup_s,
                   reading_text(monitor.read()));
        sustain(c, load, options.gemm_warmup_s);
        fmt::print("  gemm: warm ({})\n", reading_text(monitor.read()));
        warmed = true;
      }
    }
    for (const auto& s : list) {
      const Matmul matmul(c.lt, s, type, c.workspace_bytes);
      if (!matmul.found()) {
        fmt::print("  gemm {} {}x{}x{}: no cuBLASLt algorithm on this GPU, skipped\n", name, s.m,
                   s.n, s.k);
        continue;
      }
      ReadingSummary readings;
      const double us = time_shape(c, matmul, readings);
      if (!(us > 0))
        throw std::runtime_error(fmt::format("GEMM {}x{}x{}: zero time", s.m, s.n, s.k));
      const double tflops = gemm_flops(s) / (us * 1e-6) / 1e12;
      calibrate::GemmSample sample{static_cast<double>(s.m), static_cast<double>(s.n),
                                   static_cast<double>(s.k), us, tflops};
      sample.sm_clock_MHz = readings.mean_sm_clock_MHz();
      sample.temperature_C = readings.low_high.temperature_C;
      sample.power_W = readings.mean_power_W();
      fmt::print("  gemm {:>4} {:>6}x{:>6}x{:>6}  {:>10.1f} us  {:>7.1f} TFLOP/s  {}\n", name, s.m,
                 s.n, s.k, us, tflops,
                 reading_text(
                     {sample.sm_clock_MHz, std::nan(""), sample.temperature_C, sample.power_W, 0}));
      out[name].push_back(sample);
    }
  }
  return out;
}

std::vector<calibrate::HbmSample> run_hbm(const Options& options, double l2_bytes) {
  std::size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  std::size_t first = 1u << 20;
  while (2.0 * static_cast<double>(first) < calibrate::kHbmMinWorkingSetOverL2 * l2_bytes)
    first *= 2;
  std::size_t last = std::max<std::size_t>(options.quick ? (1ull << 30) : (4ull << 30), 8 * first);
  while (last > first && 4 * last > free_bytes) last /= 2;
  if (last < 4 * first)
    throw std::runtime_error(fmt::format(
        "HBM sweep: {} MiB free is too little for copies of {} MiB and more (working sets of "
        "{:g} x the L2)",
        free_bytes >> 20, first >> 20, calibrate::kHbmMinWorkingSetOverL2));
  int device = 0, sms = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count");
  DeviceBuffer src(last, "cudaMalloc HBM source"), dst(last, "cudaMalloc HBM destination");
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() { cudaStreamDestroy(s); }
  } guard{stream};
  check_cuda(cudaMemsetAsync(src.ptr, 1, last, stream), "cudaMemset HBM source");
  Events events(2);
  std::vector<calibrate::HbmSample> out;
  for (std::size_t bytes = first; bytes <= last; bytes *= 2) {
    for (int i = 0; i < options.warmup; ++i) launch_copy(src.ptr, dst.ptr, bytes, sms * 8, stream);
    check_cuda(cudaEventRecord(events.events[0], stream), "cudaEventRecord");
    for (int i = 0; i < options.iters; ++i) launch_copy(src.ptr, dst.ptr, bytes, sms * 8, stream);
    check_cuda(cudaEventRecord(events.events[1], stream), "cudaEventRecord");
    wait_stream(stream, options.timeout_s, "HBM copy");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, events.events[0], events.events[1]),
               "cudaEventElapsedTime");
    const double us = 1e3 * ms / options.iters;
    if (!(us > 0)) throw std::runtime_error(fmt::format("HBM copy of {} B: zero time", bytes));
    const double GBps = 2.0 * static_cast<double>(bytes) / (us * 1e-6) / 1e9;  // read + write
    fmt::print("  hbm copy {:>12} B  {:>10.1f} us  {:>8.1f} GB/s\n", bytes, us, GBps);
    out.push_back({static_cast<double>(bytes), us, GBps});
  }
  return out;
}

}  // namespace twin::calib
