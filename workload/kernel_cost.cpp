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
                           const std::string& attention, double power_W)
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
  if (power_W > 0) {
    if (!k.power_clock)
      throw core::Error("cluster.gpu_power_w", fmt::format("{}", power_W),
                        fmt::format("profile '{}' has no power/clock curve "
                                    "(kernels.power_clock); leave it 0",
                                    profile.name));
    clock_ratio_ = k.power_clock->clock_MHz(power_W) / k.power_clock->reference_clock_MHz.value;
  }
  peak_ = profile.peak_flops(dtype) * clock_ratio_;
  eff_ = it->second.value;
  auto bf16 = k.gemm_efficiency.find("bf16");
  peak16_ = bf16 == k.gemm_efficiency.end() ? peak_ : profile.peak_flops("bf16") * clock_ratio_;
  eff16_ = bf16 == k.gemm_efficiency.end() ? eff_ : bf16->second.value;
  sms_ = k.sm_count.value;
  tile_m_ = k.gemm_tile_m.value;
  tile_n_ = k.gemm_tile_n.value;
  split_k_ = {1};
  if (k.gemm_tiles) {
    for (const auto& [tm, tn] : k.gemm_tiles->shapes) {
      tiles_.emplace_back(tm, tn);
      if (tm != tn) tiles_.emplace_back(tn, tm);
    }
    split_k_.insert(split_k_.end(), k.gemm_tiles->split_k.begin(), k.gemm_tiles->split_k.end());
    stream_k_ = k.gemm_tiles->stream_k;
    half_intensity_ = k.gemm_tile_half_intensity.value;
  } else {
    const double small = std::min(tile_m_, tile_n_);
    tiles_ = {{tile_m_, tile_n_}, {tile_n_, tile_m_}, {small, small}};
  }
  for (const auto& [tm, tn] : tiles_)
    ref_intensity_ = std::max(ref_intensity_, tm * tn / (tm + tn));
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

KernelCoster::GemmTime KernelCoster::gemm_compute_s(double m, double n, double k, double batch,
                                                    bool bf16, double sms) const {
  // Per SM; the profile's efficiency is that of the whole GPU's SM count.
  // The pipeline stages are a fixed number of bytes: K per stage grows as the operands shrink.
  const double k_half = bf16 ? k_half_ : k_half_ * 2.0 / operand_bytes_;
  const double per_sm_peak = (bf16 ? peak16_ * eff16_ : peak_ * eff_) / sms_;
  // Split-K's slices are no shorter than this: cuBLAS splits long K loops, not short ones.
  constexpr double kMinSliceK = 256;
  GemmTime best{0, 0};
  auto consider = [&](double compute_s, double after_s) {
    if (best.compute_s == 0 || compute_s + after_s < best.compute_s + best.after_s)
      best = {compute_s, after_s};
  };
  for (const auto& [tm, tn] : tiles_) {
    const double intensity = tm * tn / (tm + tn);
    const double f_tile =
        (1 + half_intensity_ / ref_intensity_) / (1 + half_intensity_ / intensity);
    const double tiles = batch * std::ceil(m / tm) * std::ceil(n / tn);
    for (int s : split_k_) {
      const double ks = k / s;
      if (s > 1 && (ks < kMinSliceK || tiles >= sms)) continue;
      const double per_sm = per_sm_peak * f_tile * ks / (ks + k_half);
      const double waves = std::ceil(s * tiles / sms);
      const double reduce_s = s > 1 ? launch_s_ + (4.0 * s + 2.0) * m * n * batch / hbm_Bps_ : 0.0;
      consider(waves * 2.0 * tm * tn * ks / per_sm, reduce_s);
    }
    if (stream_k_ && tiles > sms) {
      // Every SM takes an equal share of all tiles' K iterations; the tiles it shares with
      // another SM go through one fp32 partial written and read back.
      const double per_sm = per_sm_peak * f_tile * k / (k + k_half);
      const double fixup_s = 2.0 * 4.0 * tm * tn / (hbm_Bps_ / sms);
      consider(tiles * 2.0 * tm * tn * k / (sms * per_sm) + fixup_s, 0.0);
    }
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
  const GemmTime t = gemm_compute_s(m, n, k, batch, bf16, sms_);
  out = finish(out, t.compute_s, out.bytes / hbm_Bps_);
  out.time_s += t.after_s;
  return out;
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
  const GemmTime t = gemm_compute_s(mc, n, k, 1, bf16, sms);
  const Kernel one = finish(Kernel{}, t.compute_s, chunk_bytes / hbm_Bps_);
  out.limiter = one.limiter;
  out.time_s = chunks * (one.time_s + t.after_s);
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
  const double rate = table.tflops(forward, std::max(head_dim, dv), band ? window : table_seq) *
                      1e12 * clock_ratio_;
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
