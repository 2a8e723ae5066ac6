// clustertwin-calib: measures a node's GEMM throughput, HBM bandwidth and NCCL collectives, and
// writes them as nccl-tests-style text, raw HDF5 (read by `clustertwin calibrate fit --raw`) and
// a fitted profile.
//
//   clustertwin-calib [--out DIR] [--quick] [--no-gemm] [--no-hbm] [--no-nccl] [--ops a,b] ...
//   mpirun -np N clustertwin-calib ...   one rank per GPU, across nodes (NCCL id over MPI)
//
// Order of work, so that a mistake costs seconds: every option is validated, the launch is
// checked (a build without MPI refuses a multi-rank launcher; ranks never share a GPU), the GPU
// is found and matched to a shipped base profile, the output folder is proven writable — and
// only then does anything run. Any error on any rank aborts the whole MPI job with the reason.
// Exit codes: 0 done, 2 invalid input or failed measurement, 3 no usable GPU, 4 measured but
// the fit rejected a figure as a measurement error (raw data and logs are still written).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "calibrate/bench/calib.hpp"
#include "calibrate/gpu_match.hpp"
#include "calibrate/profile.hpp"
#include "calibrate/raw_data.hpp"
#include "core/error.hpp"

namespace {

using namespace twin;

#ifdef CLUSTERTWIN_WITH_MPI
constexpr bool kBuiltWithMpi = true;
#else
constexpr bool kBuiltWithMpi = false;
#endif

/// Thrown when no GPU can be used: exit code 3, so scripts can tell it from a failure.
struct NoGpu : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string today() {
  const std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d", std::gmtime(&t));
  return buffer;
}

std::string uuid_text(const cudaUUID_t& uuid) {
  std::string text;
  for (char byte : uuid.bytes) text += fmt::format("{:02x}", static_cast<unsigned char>(byte));
  return text;
}

/// Creates the output folder and proves it writable (rank 0).
void prepare_output(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  const std::string probe = dir + "/.clustertwin-calib-write-test";
  bool ok = !error;
  if (ok) {
    std::ofstream out(probe);
    ok = static_cast<bool>(out << "ok\n");
  }
  std::filesystem::remove(probe, error);
  if (!ok) throw core::Error("--out", dir, "cannot create or write this folder");
}

int run(const calib::Options& options, calib::World& world) {
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0)
    throw NoGpu(fmt::format(
        "no usable CUDA device ({}). Run it on a node with an NVIDIA GPU and its driver; "
        "nothing was measured.",
        probe != cudaSuccess ? cudaGetErrorString(probe) : "0 devices"));
  world.local_gpus = devices;
  if (world.mpi) {
    world.device = calib::device_for_rank(world.local_rank, world.local_size, devices, world.host);
    cudaDeviceProp prop{};
    calib::check_cuda(cudaGetDeviceProperties(&prop, world.device), "cudaGetDeviceProperties");
    calib::check_distinct_gpus(calib::allgather_on_node(uuid_text(prop.uuid), world), world.host);
  }
  calib::check_cuda(cudaSetDevice(world.device), "cudaSetDevice");
  cudaDeviceProp prop{};
  calib::check_cuda(cudaGetDeviceProperties(&prop, world.device), "cudaGetDeviceProperties");
  char bus_id[32] = {0};
  calib::check_cuda(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, world.device),
                    "cudaDeviceGetPCIBusId");
  int l2 = 0;
  calib::check_cuda(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, world.device), "L2");

  calibrate::RawCalibration raw;
  raw.gpu = prop.name;
  raw.host = world.host;
  raw.date = today();
  raw.l2_bytes = l2;
  raw.time_over_ranks =
      options.time_over_ranks == calib::TimeOverRanks::average ? "average" : "maximum";
  std::string base_name;
  if (world.rank == 0) {
    base_name = calibrate::choose_base_profile(raw.gpu, options.base);
    (void)calibrate::load_profile(base_name);
    prepare_output(options.out_dir);
    fmt::print("clustertwin-calib on {} ({} GPU(s) here, {} rank(s)), {}; base profile '{}'\n",
               raw.gpu, devices, world.mpi ? world.size : devices, raw.date, base_name);
  }
  const calib::GpuMonitor monitor(bus_id);
  raw.monitor = monitor.status();
  if (world.rank == 0) {
    fmt::print("clocks and temperature: {}\n", monitor.status());
    if (options.gemm) raw.gemm = calib::run_gemm(options, monitor);
    if (options.hbm) raw.hbm = calib::run_hbm(options, raw.l2_bytes);
  }
  std::map<std::string, std::string> text;
  const int ranks = world.mpi ? world.size : devices;
  if (options.nccl && ranks >= 2)
    raw.collectives = calib::run_nccl(options, world, text);
  else if (options.nccl && world.rank == 0)
    fmt::print("nccl: one GPU, no collectives to measure\n");
  if (world.rank != 0) return 0;

  for (const auto& [op, log] : text) {
    std::ofstream out(options.out_dir + "/nccl-" + op + ".txt");
    if (!(out << log)) throw core::Error("--out", options.out_dir, "cannot write nccl-" + op);
  }
  calibrate::write_raw_hdf5(options.out_dir + "/calibration.h5", raw);
  fmt::print("wrote {0}/calibration.h5{1}\n", options.out_dir,
             text.empty() ? "" : fmt::format(" and {}/nccl-*.txt", options.out_dir));

  // The measured profile: the base's datasheet figures with everything measured here fitted
  // (the same fit as `clustertwin calibrate fit --raw`).
  const calibrate::Profile shipped = calibrate::load_profile(base_name);
  calibrate::Profile profile = shipped;
  profile.name = shipped.name + "-measured";
  profile.description =
      fmt::format("{} measured on {} ({}) by clustertwin-calib", raw.gpu, raw.host, raw.date);
  try {
    const std::string origin =
        fmt::format("clustertwin-calib on {} {}, {}", raw.host, raw.gpu, raw.date);
    for (const auto& line : calibrate::fit_raw_into(raw, profile, origin).lines)
      fmt::print("fit: {}\n", line);
  } catch (const core::Error& e) {
    fmt::print(stderr,
               "clustertwin-calib: the fit rejected a measurement: {}\nno profile written; the "
               "raw data are in {}/calibration.h5\n",
               e.what(), options.out_dir);
    return 4;
  }
  std::ofstream(options.out_dir + "/profile.json") << calibrate::to_json(profile);
  fmt::print("wrote {}/profile.json\n", options.out_dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  calib::OptionParser parser;
  CLI11_PARSE(parser.app(), argc, argv);
  calib::Options options;
  calib::Launch launch;
  try {
    options = parser.validated();
    launch = calib::detect_launch(calib::process_environment());
    calib::check_launch(launch, kBuiltWithMpi);
  } catch (const core::Error& e) {
    fmt::print(stderr, "clustertwin-calib: error: {}\n", e.what());
    return 2;
  }
  calib::World world;
  int status = 0;
  try {
    world = calib::start_world(launch, argc, argv);
    status = run(options, world);
  } catch (const NoGpu& e) {
    calib::fail_world(world, e.what(), 3);
    status = 3;
  } catch (const std::exception& e) {
    calib::fail_world(world, e.what(), 2);
    status = 2;
  }
  calib::finish_world(world);
  return status;
}
