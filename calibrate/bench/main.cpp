// clustertwin-calib: measures a node's GEMM throughput, HBM bandwidth and NCCL collectives, and
// writes them as nccl-tests-style text (read by `clustertwin calibrate fit`), raw HDF5, and a
// fitted profile.
//
//   clustertwin-calib [--out DIR] [--no-gemm] [--no-hbm] [--no-nccl] [--ops a,b] [--max-bytes 16G]
//   mpirun -np N clustertwin-calib ...   one rank per GPU, across nodes (NCCL id over MPI)
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>

#include "calibrate/bench/calib.hpp"
#include "calibrate/calibration.hpp"
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "calibrate/raw_data.hpp"
#include "core/error.hpp"

#ifdef CLUSTERTWIN_WITH_MPI
#include <mpi.h>
#endif

namespace {

using namespace twin;

double parse_bytes(const std::string& text) {
  std::size_t used = 0;
  const double v = std::stod(text, &used);
  const char unit = used < text.size() ? static_cast<char>(std::toupper(text[used])) : ' ';
  const double scale = unit == 'K'   ? 1024.0
                       : unit == 'M' ? 1048576.0
                       : unit == 'G' ? 1073741824.0
                                     : 1.0;
  return v * scale;
}

std::string today() {
  const std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d", std::gmtime(&t));
  return buffer;
}

calib::World make_world(int& argc, char**& argv) {
  calib::World w;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  w.host = host;
#ifdef CLUSTERTWIN_WITH_MPI
  if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
    w.mpi = w.size > 1;
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &w.local_rank);
    int is_leader = w.local_rank == 0 ? 1 : 0;
    MPI_Allreduce(&is_leader, &w.nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_free(&local);
  }
#endif
  (void)argc;
  (void)argv;
  return w;
}

void finalize(const calib::World& w) {
#ifdef CLUSTERTWIN_WITH_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Finalize();
#endif
  (void)w;
}

}  // namespace

int main(int argc, char** argv) {
  calib::Options options;
  std::string ops = "all_reduce,all_gather,reduce_scatter,alltoall,sendrecv";
  std::string max_bytes = "16G", base_profile = "h100-sxm";
  bool no_gemm = false, no_hbm = false, no_nccl = false;
  CLI::App app{"clustertwin-calib: GEMM, HBM and NCCL microbenchmarks for a calibration profile"};
  app.add_option("--out", options.out_dir, "Output folder")->capture_default_str();
  app.add_flag("--no-gemm", no_gemm, "Skip the cuBLASLt GEMM sweep");
  app.add_flag("--no-hbm", no_hbm, "Skip the HBM copy sweep");
  app.add_flag("--no-nccl", no_nccl, "Skip the NCCL sweeps");
  app.add_option("--ops", ops, "NCCL collectives, comma-separated")->capture_default_str();
  app.add_option("--min-bytes", options.min_bytes, "Smallest NCCL size")->capture_default_str();
  app.add_option("--max-bytes", max_bytes, "Largest NCCL size (K/M/G binary)")
      ->capture_default_str();
  app.add_option("--warmup", options.warmup, "Warm-up iterations")->capture_default_str();
  app.add_option("--iters", options.iters, "Timed iterations")->capture_default_str();
  app.add_option("--base", base_profile, "Profile the fitted values start from")
      ->capture_default_str();
  app.add_flag("--quick", options.quick, "Fewer shapes and sizes (a smoke run)");
  CLI11_PARSE(app, argc, argv);
  options.gemm = !no_gemm;
  options.hbm = !no_hbm;
  options.nccl = !no_nccl;
  options.max_bytes = parse_bytes(max_bytes);
  options.ops.clear();
  for (std::size_t start = 0; start <= ops.size();) {
    const auto comma = ops.find(',', start);
    options.ops.push_back(ops.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }

  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    fmt::print(stderr,
               "clustertwin-calib: no usable CUDA device ({}). Run it on a node with an NVIDIA GPU "
               "and its driver; nothing was measured.\n",
               probe != cudaSuccess ? cudaGetErrorString(probe) : "0 devices");
    return 3;
  }

  calib::World world = make_world(argc, argv);
  world.local_gpus = devices;
  int status = 0;
  try {
    calibrate::RawCalibration raw;
    cudaDeviceProp prop{};
    const int device = world.mpi ? world.local_rank % devices : 0;
    calib::check_cuda(cudaSetDevice(device), "cudaSetDevice");
    calib::check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    raw.gpu = prop.name;
    raw.host = world.host;
    raw.date = today();
    if (world.rank == 0) {
      std::filesystem::create_directories(options.out_dir);
      fmt::print("clustertwin-calib on {} ({} GPU(s) here, {} rank(s)), {}\n", raw.gpu, devices,
                 world.mpi ? world.size : devices, raw.date);
      if (options.gemm) raw.gemm = calib::run_gemm(options);
      if (options.hbm) raw.hbm = calib::run_hbm(options);
    }
    std::map<std::string, std::string> text;
    if (options.nccl) raw.collectives = calib::run_nccl(options, world, text);

    if (world.rank == 0) {
      for (const auto& [op, log] : text) {
        std::ofstream(options.out_dir + "/nccl-" + op + ".txt") << log;
      }
      calibrate::write_raw_hdf5(options.out_dir + "/calibration.h5", raw);
      // A measured profile: the base's datasheet figures with everything measured here fitted.
      calibrate::Profile profile = calibrate::load_profile(base_profile);
      profile.name = base_profile + "-measured";
      profile.description =
          fmt::format("{} measured on {} ({}) by clustertwin-calib", raw.gpu, raw.host, raw.date);
      const std::string origin =
          fmt::format("clustertwin-calib on {} {}, {}", raw.host, raw.gpu, raw.date);
      if (raw.gemm.count("bf16") && raw.gemm["bf16"].size() >= 2)
        fmt::print("gemm fit: median error {:.1f}%\n",
                   calibrate::fit_gemm_into(raw.gemm["bf16"], "bf16", profile, origin));
      if (!raw.hbm.empty()) calibrate::fit_hbm_into(raw.hbm, profile, origin);
      for (const auto& [op, log] : text) {
        const auto parsed =
            calibrate::parse_nccl_tests(log, options.out_dir + "/nccl-" + op + ".txt");
        calibrate::FitOptions fit;
        fit.measured_on = origin;
        if (parsed.runs[0].rows.size() >= 2 && parsed.ranks >= 2)
          calibrate::fit_log_into(parsed, profile, fit);
      }
      std::ofstream(options.out_dir + "/profile.json") << calibrate::to_json(profile);
      fmt::print("wrote {0}/calibration.h5, {0}/nccl-*.txt and {0}/profile.json\n",
                 options.out_dir);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "clustertwin-calib: error: {}\n", e.what());
    status = 2;
  }
  finalize(world);
  return status;
}
