#include "workload/kernel_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/text.hpp"

namespace twin::workload {

namespace {

/// A kernel that only moves `bytes` through HBM, before it is costed.
Kernel moving(const std::string& name, double bytes) {
  Kernel out;
  out.name = name;
  out.shape = fmt::format("{:.3g} B", bytes);
  out.bytes = bytes;
  return out;
}

}  // namespace

const char* to_string(Limiter l) {
  switch (l) {
    case Limiter::compute:
      return "compute";
    case Limiter::memory:
      return "memory";
    case Limiter::launch:
      return "launch";
  }
  return "?";
}

KernelCoster::KernelCoster(const calibrate::Profile& profile, const std::string& dtype,
                           const std::string& attention)
    : profile_(profile) {
  const auto& k = profile.kernels;
  if (!k.present)
    throw core::Error("kernels", profile.name,
                      "the hardware profile has no kernels section (SM count, GEMM tiles, "
                      "attention and HBM figures); the step cannot be costed kernel by kernel");
  auto it = k.gemm_efficiency.find(dtype);
  if (it == k.gemm_efficiency.end()) {
    std::vector<std::string> names;
    for (const auto& [d, f] : k.gemm_efficiency) names.push_back(d);
    throw core::Error("training.precision", dtype,
                      fmt::format("profile '{}' has no GEMM efficiency for this dtype; it has {}",
                                  profile.name, core::quoted_list(names)));
  }
  peak_ = profile.peak_flops(dtype);
  eff_ = it->second.value;
  auto bf16 = k.gemm_efficiency.find("bf16");
  peak16_ = bf16 == k.gemm_efficiency.end() ? peak_ : profile.peak_flops("bf16");
  eff16_ = bf16 == k.gemm_efficiency.end() ? eff_ : bf16->second.value;
  sms_ = k.sm_count.value;
  tile_m_ = k.gemm_tile_m.value;
  tile_n_ = k.gemm_tile_n.value;
  k_half_ = k.gemm_k_half.value;
  operand_bytes_ = dtype == "fp8" ? 1.0 : 2.0;
  hbm_Bps_ = k.hbm_achievable_GBps.value * 1e9;
  memory_Bps_ = hbm_Bps_ * k.memory_bound_efficiency.value;
  launch_s_ = k.launch_overhead_us.value * 1e-6;
  attention_ = attention;
  if (attention == "unfused") return;
  const calibrate::AttentionKernel* kind = calibrate::resolve_attention_kernel(k, attention);
  if (kind == nullptr) {
    std::vector<std::string> names;
    for (const auto& choice : calibrate::attention_choices()) names.push_back(choice.name);
    throw core::Error("training.attention", attention,
                      fmt::format("unknown attention kernel; one of {}", core::quoted_list(names)));
  }
  const auto& table = k.*kind->table;
  if (!table)
    throw core::Error("training.attention", attention,
                      fmt::format("profile '{}' has no measurements for this attention kernel "
                                  "(kernels.{}); use training.attention: unfused",
                                  profile.name, kind->field));
  flash_ = &*table;
  attention_ = kind->name;
}

Kernel KernelCoster::finish(Kernel k, double compute_s, double memory_s) const {
  k.time_s = launch_s_ + std::max(compute_s, memory_s);
  if (launch_s_ >= std::max(compute_s, memory_s))
    k.limiter = Limiter::launch;
  else
    k.limiter = compute_s >= memory_s ? Limiter::compute : Limiter::memory;
  return k;
}

double KernelCoster::gemm_compute_s(double m, double n, double k, double batch, bool bf16,
                                    double sms) const {
  // Per SM; the profile's efficiency is that of the whole GPU's SM count.
  // The pipeline stages are a fixed number of bytes: K per stage grows as the operands shrink.
  const double k_half = bf16 ? k_half_ : k_half_ * 2.0 / operand_bytes_;
  const double per_sm = (bf16 ? peak16_ * eff16_ : peak_ * eff_) / sms_ * k / (k + k_half);
  const double small = std::min(tile_m_, tile_n_);
  double best = 0;
  for (auto [tm, tn] :
       {std::pair{tile_m_, tile_n_}, std::pair{tile_n_, tile_m_}, std::pair{small, small}}) {
    const double tiles = batch * std::ceil(m / tm) * std::ceil(n / tn);
    const double waves = std::ceil(tiles / sms);
    const double t = waves * 2.0 * tm * tn * k / per_sm;
    if (best == 0 || t < best) best = t;
  }
  return best;
}

Kernel::Saves KernelCoster::saves_of_gemm(bool bf16) const {
  // A 16-bit GEMM is PyTorch's mm, whose autograd node saves its operands before the product
  // runs; an FP8 GEMM is Transformer Engine's linear, an autograd Function that saves its
  // (FP8) operands after computing.
  return fp8() && !bf16 ? Kernel::Saves::outputs : Kernel::Saves::inputs;
}

Kernel KernelCoster::gemm(const std::string& name, double m, double n, double k, double batch,
                          bool bf16) const {
  Kernel out;
  out.name = name;
  out.shape = batch > 1 ? fmt::format("{:g}x({:g}x{:g}x{:g})", batch, m, n, k)
                        : fmt::format("{:g}x{:g}x{:g}", m, n, k);
  out.tensor_core = true;
  out.saves = saves_of_gemm(bf16);
  out.flops = 2.0 * m * n * k * batch;
  out.bytes = ((m * k + k * n) * (bf16 ? 2.0 : operand_bytes_) + m * n * 2.0) * batch;
  if (!(m > 0 && n > 0 && k > 0 && batch > 0)) return finish(out, 0, 0);
  return finish(out, gemm_compute_s(m, n, k, batch, bf16, sms_), out.bytes / hbm_Bps_);
}

Kernel KernelCoster::split_gemm(const std::string& name, double m, double n, double k, int chunks,
                                double reserved_sms, bool bf16) const {
  if (chunks <= 1 && reserved_sms <= 0) return gemm(name, m, n, k, 1, bf16);
  chunks = std::max(1, chunks);
  const double mc = m / chunks;
  Kernel out;
  out.name = name;
  out.shape = fmt::format("{} x {:g}x{:g}x{:g}", chunks, mc, n, k);
  if (reserved_sms > 0) out.shape += fmt::format(" on {:g} SMs", sms_ - reserved_sms);
  out.tensor_core = true;
  out.saves = saves_of_gemm(bf16);
  out.flops = 2.0 * m * n * k;
  // The weights are read again by every chunk.
  const double chunk_bytes = (mc * k + k * n) * (bf16 ? 2.0 : operand_bytes_) + mc * n * 2.0;
  out.bytes = chunks * chunk_bytes;
  if (!(m > 0 && n > 0 && k > 0)) return finish(out, 0, 0);
  const double sms = std::max(1.0, sms_ - reserved_sms);
  const Kernel one =
      finish(Kernel{}, gemm_compute_s(mc, n, k, 1, bf16, sms), chunk_bytes / hbm_Bps_);
  out.limiter = one.limiter;
  out.time_s = chunks * one.time_s;
  return out;
}

Kernel KernelCoster::flash_attention(const std::string& name, bool forward, double batch_heads,
                                     double s_q, double s_k, double head_dim, bool causal,
                                     double table_seq, double v_head_dim, double window) const {
  if (!has_flash())
    throw core::Error("training.attention", "flash",
                      fmt::format("profile '{}' has no flash-attention measurements "
                                  "(kernels.flash_attention); use training.attention: unfused",
                                  profile_.name));
  const calibrate::AttentionTable& table = *flash_;
  Kernel out;
  out.name = name;
  const double dv = v_head_dim > 0 ? v_head_dim : head_dim;
  const bool band = causal && window > 0 && window < s_k;
  out.shape =
      dv == head_dim
          ? fmt::format("{:g}x(s {:g}x{:g}, d {:g})", batch_heads, s_q, s_k, head_dim)
          : fmt::format("{:g}x(s {:g}x{:g}, d {:g}/{:g})", batch_heads, s_q, s_k, head_dim, dv);
  if (band) out.shape += fmt::format(", window {:g}", window);
  out.tensor_core = true;
  // Query-key pairs: the causal triangle (s_q s_k / 2), or the band of a sliding window.
  const double pairs = band ? s_q * window - window * window / 2 : s_q * s_k * (causal ? 0.5 : 1.0);
  const double fwd = 2.0 * batch_heads * pairs * (head_dim + dv);
  out.flops = forward ? fwd : 2.5 * fwd;
  // Q, K, V and O (and their gradients backward) stream through HBM once.
  out.bytes = batch_heads * (s_q + s_k) * (head_dim + dv) * 2.0 * (forward ? 1.0 : 2.0);
  const double rate =
      table.tflops(forward, std::max(head_dim, dv), band ? window : table_seq) * 1e12;
  return finish(out, out.flops / rate, out.bytes / hbm_Bps_);
}

Kernel KernelCoster::memory(const std::string& name, double bytes) const {
  return finish(moving(name, bytes), 0, bytes / memory_Bps_);
}

Kernel KernelCoster::memory(const std::string& name, double bytes, int launches) const {
  return repeated(name, bytes, launches, bytes / launches / memory_Bps_);
}

Kernel KernelCoster::stream(const std::string& name, double bytes) const {
  return finish(moving(name, bytes), 0, bytes / hbm_Bps_);
}

Kernel KernelCoster::stream(const std::string& name, double bytes, int launches) const {
  return repeated(name, bytes, launches, bytes / launches / hbm_Bps_);
}

Kernel KernelCoster::repeated(const std::string& name, double bytes, int launches,
                              double memory_s_each) const {
  launches = std::max(1, launches);
  const Kernel one = finish(Kernel{}, 0, memory_s_each);
  Kernel out = moving(name, bytes);
  if (launches > 1) out.shape = fmt::format("{} x {:.3g} B", launches, bytes / launches);
  out.time_s = launches * one.time_s;
  out.limiter = one.limiter;
  return out;
}

}  // namespace twin::workload
