#pragma once
/// Which shipped profile describes a GPU, from the name its driver reports.
///
/// A measured efficiency is a ratio to a datasheet peak, so measuring against the wrong GPU's
/// datasheet silently corrupts the profile (an H200's 4.8 TB/s against the H100's 3.35 TB/s
/// gives an HBM efficiency above 1). Names as CUDA reports them (cudaDeviceProp::name):
///   "NVIDIA H100 80GB HBM3"  H100 SXM5           -> h100-sxm
///   "NVIDIA H100 PCIe", "NVIDIA H100 NVL"         other boards (clocks, power, HBM): none
///   "NVIDIA H200"  H200 SXM                       -> h200-sxm
///   "NVIDIA H200 NVL", "NVIDIA GH200 ..."         other boards: none
///   "NVIDIA A100-SXM4-80GB"                       -> a100-sxm-80gb
///   "NVIDIA A100-SXM4-40GB"                       -> a100-sxm-40gb
///   "NVIDIA A100 80GB PCIe", "NVIDIA A100-PCIE-40GB"  other board: none

#include <optional>
#include <string>

namespace twin::calibrate {

/// The shipped profile for a GPU name, or nullopt when none describes it.
std::optional<std::string> shipped_profile_for_gpu(const std::string& gpu_name);

/// `explicit_base` when given; otherwise the shipped profile for `gpu_name`. Throws core::Error
/// (naming the GPU and the shipped profiles) when none matches.
std::string choose_base_profile(const std::string& gpu_name, const std::string& explicit_base);

}  // namespace twin::calibrate
