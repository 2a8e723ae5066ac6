// GEMM throughput with cuBLASLt, and the HBM copy sweep.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "calibrate/bench/calib.hpp"

namespace twin::calib {

double time_copy_us(void* src, void* dst, size_t bytes, int warmup, int iters);

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

/// One timed matmul configuration. Returns microseconds per GEMM, or a negative value when
/// cuBLASLt has no algorithm for it on this GPU.
double time_gemm(cublasLtHandle_t lt, const Shape& s, cudaDataType_t ab_type,
                 cudaDataType_t cd_type, void* a, void* b, void* d, void* workspace,
                 size_t workspace_bytes, int warmup, int iters) {
  cublasLtMatmulDesc_t op = nullptr;
  check_lt(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul desc");
  // Row-major C[m,n] = A[m,k] B[k,n] as column-major C^T = B^T A^T; FP8 needs the "TN" layout.
  const bool fp8 = ab_type == CUDA_R_8F_E4M3;
  cublasOperation_t transa = fp8 ? CUBLAS_OP_T : CUBLAS_OP_N, transb = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa);
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb);
  cublasLtMatrixLayout_t la, lb, lc;
  check_lt(
      cublasLtMatrixLayoutCreate(&la, ab_type, fp8 ? s.k : s.n, fp8 ? s.n : s.k, fp8 ? s.k : s.n),
      "layout A");
  check_lt(cublasLtMatrixLayoutCreate(&lb, ab_type, s.k, s.m, s.k), "layout B");
  check_lt(cublasLtMatrixLayoutCreate(&lc, cd_type, s.n, s.m, s.n), "layout C");
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &workspace_bytes, sizeof workspace_bytes);
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heuristic, &found);
  double us = -1;
  if (found > 0) {
    const float alpha = 1.0f, beta = 0.0f;
    auto launch = [&] {
      return cublasLtMatmul(lt, op, &alpha, a, la, b, lb, &beta, d, lc, d, lc, &heuristic.algo,
                            workspace, workspace_bytes, nullptr);
    };
    for (int i = 0; i < warmup; ++i) check_lt(launch(), "matmul");
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start);
    for (int i = 0; i < iters; ++i) check_lt(launch(), "matmul");
    cudaEventRecord(stop);
    check_cuda(cudaEventSynchronize(stop), "matmul");
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    us = 1e3 * ms / iters;
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(op);
  return us;
}

}  // namespace

std::map<std::string, std::vector<calibrate::GemmSample>> run_gemm(const Options& options) {
  const auto list = shapes(options.quick);
  long max_elems = 0;
  for (const auto& s : list) max_elems = std::max({max_elems, s.m * s.k, s.k * s.n, s.m * s.n});
  void *a = nullptr, *b = nullptr, *d = nullptr, *workspace = nullptr;
  const size_t workspace_bytes = 64ull << 20;
  check_cuda(cudaMalloc(&a, static_cast<size_t>(max_elems) * 2), "cudaMalloc A");
  check_cuda(cudaMalloc(&b, static_cast<size_t>(max_elems) * 2), "cudaMalloc B");
  check_cuda(cudaMalloc(&d, static_cast<size_t>(max_elems) * 2), "cudaMalloc D");
  check_cuda(cudaMalloc(&workspace, workspace_bytes), "cudaMalloc workspace");
  cudaMemset(a, 0, static_cast<size_t>(max_elems) * 2);
  cudaMemset(b, 0, static_cast<size_t>(max_elems) * 2);
  cublasLtHandle_t lt;
  check_lt(cublasLtCreate(&lt), "cublasLtCreate");
  int device = 0, major = 0, minor = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  std::vector<std::pair<std::string, cudaDataType_t>> dtypes = {{"bf16", CUDA_R_16BF}};
  if (major * 10 + minor >= 89) dtypes.emplace_back("fp8", CUDA_R_8F_E4M3);

  std::map<std::string, std::vector<calibrate::GemmSample>> out;
  for (const auto& [name, type] : dtypes) {
    for (const auto& s : list) {
      const double us = time_gemm(lt, s, type, CUDA_R_16BF, a, b, d, workspace, workspace_bytes,
                                  options.warmup, options.iters);
      if (us <= 0) {
        fmt::print("  gemm {} {}x{}x{}: no cuBLASLt algorithm on this GPU, skipped\n", name, s.m,
                   s.n, s.k);
        continue;
      }
      const double flops =
          2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
      const double tflops = flops / (us * 1e-6) / 1e12;
      fmt::print("  gemm {:>4} {:>6}x{:>6}x{:>6}  {:>10.1f} us  {:>7.1f} TFLOP/s\n", name, s.m, s.n,
                 s.k, us, tflops);
      out[name].push_back({static_cast<double>(s.m), static_cast<double>(s.n),
                           static_cast<double>(s.k), us, tflops});
    }
  }
  cublasLtDestroy(lt);
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  cudaFree(workspace);
  return out;
}

std::vector<calibrate::HbmSample> run_hbm(const Options& options) {
  const size_t max_bytes = options.quick ? (1ull << 30) : (4ull << 30);
  void *src = nullptr, *dst = nullptr;
  check_cuda(cudaMalloc(&src, max_bytes), "cudaMalloc HBM source");
  check_cuda(cudaMalloc(&dst, max_bytes), "cudaMalloc HBM destination");
  cudaMemset(src, 1, max_bytes);
  std::vector<calibrate::HbmSample> out;
  for (size_t bytes = 16ull << 20; bytes <= max_bytes; bytes *= 2) {
    const double us = time_copy_us(src, dst, bytes, options.warmup, options.iters);
    const double GBps = 2.0 * static_cast<double>(bytes) / (us * 1e-6) / 1e9;  // read + write
    fmt::print("  hbm copy {:>12} B  {:>10.1f} us  {:>8.1f} GB/s\n", bytes, us, GBps);
    out.push_back({static_cast<double>(bytes), us, GBps});
  }
  cudaFree(src);
  cudaFree(dst);
  return out;
}

}  // namespace twin::calib
