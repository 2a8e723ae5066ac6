#pragma once
// Fixtures shared by the validation test suites: a tiny published run, a scratch directory of
// validation scenarios, and a run looked up by name.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "twin/validation.hpp"

namespace twin::sim {
namespace {

namespace fs = std::filesystem;

// A GPT-style dense model (GELU MLP of 4h, MHA) on one 8-GPU node: small enough to simulate in
// milliseconds, and its model FLOPs have Narayanan et al.'s closed form.
inline std::string tiny_run(const std::string& name, const std::string& family,
                            const std::string& metric, double published) {
  return "schema_version: 1\n"
         "name: " +
         name +
         "\n"
         "cluster: {nodes: 1, gpus_per_node: 8, gpu: h100-sxm, nics_per_node: 8}\n"
         "fabric: {tiers: 2, switch_radix: 8}\n"
         "model: {name: gpt-tiny, layers: 4, hidden: 1024, heads: 8, kv_heads: 8, ffn_hidden: "
         "4096, vocab: 32768, seq_len: 2048, mlp: gelu}\n"
         "parallelism: {tp: 1, pp: 1, dp: 8, zero: 1, micro_batch: 1}\n"
         "training: {global_batch: 16, tokens: 1.0e9, precision: bf16}\n"
         "recovery: {hot_spares: 0}\n"  // a one-node job has no room for the default spares
         "validation:\n"
         "  family: " +
         family +
         "\n"
         "  metric: " +
         metric +
         "\n"
         "  published: " +
         fmt::format("{:.17g}", published) +
         "\n"
         "  source: \"test fixture\"\n";
}

/// A fresh directory under the build's temporary space, removed at the end of the test.
class ValidationDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("clustertwin-validation-{}",
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& relative, const std::string& text) {
    fs::create_directories((dir_ / relative).parent_path());
    std::ofstream(dir_ / relative) << text;
  }
  fs::path dir_;
};

inline const ValidationRun& run_named(const ValidationReport& r, const std::string& name) {
  for (const auto& run : r.runs)
    if (run.name == name) return run;
  ADD_FAILURE() << "no run " << name;
  return r.runs.front();
}

}  // namespace
}  // namespace twin::sim
