// _clustertwin: the compiled half of the `clustertwin` Python package.
//
// Every analysis returns the same JSON text the CLI prints with --json; the Python half turns it
// into dicts (and DataFrames), so a notebook and `clustertwin ... --json` can never disagree.
// Long calls run on a worker thread with the GIL released while the calling thread polls for
// Ctrl-C; a KeyboardInterrupt cancels the work through a core::CancelToken.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/cancel.hpp"
#include "core/error.hpp"
#include "netsim/flow.hpp"
#include "topology/bom.hpp"
#include "topology/routing.hpp"
#include "twin/campaign.hpp"
#include "twin/collective_sweep.hpp"
#include "twin/fabric_report.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"
#include "twin/sweep.hpp"
#include "twin/validation.hpp"
#include "twin/validation_fit.hpp"

namespace py = pybind11;

namespace twin::python {
namespace {

/// A scenario as a planner edits it: where it came from plus the `--set` overrides applied in
/// order, and the validated result. Every change is validated at once, with the CLI's messages.
class PyScenario {
 public:
  static PyScenario load(const std::string& path) {
    if (path.empty()) throw core::Error("path", "", "give a scenario file (or Scenario.default())");
    return PyScenario(path, {});
  }
  static PyScenario default_scenario() { return PyScenario("", {}); }

  /// Applies `key=value` (value already YAML text); on error the scenario is unchanged.
  void set(const std::string& key, const std::string& yaml_value) {
    auto overrides = overrides_;
    overrides.push_back(key + "=" + yaml_value);
    scenario_ = sim::load_scenario(path_, overrides);
    overrides_ = std::move(overrides);
  }

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::vector<std::string>& overrides() const { return overrides_; }
  [[nodiscard]] const sim::Scenario& scenario() const { return scenario_; }

 private:
  PyScenario(std::string path, std::vector<std::string> overrides)
      : path_(std::move(path)),
        overrides_(std::move(overrides)),
        scenario_(sim::load_scenario(path_, overrides_)) {}

  std::string path_;
  std::vector<std::string> overrides_;
  sim::Scenario scenario_;
};

/// Runs `work(token)` on a worker thread with the GIL released; every 20 ms the calling thread
/// takes the GIL back to let Python handle signals. Ctrl-C cancels the token and, once the work
/// has stopped, raises KeyboardInterrupt. Exceptions from the work propagate unchanged.
template <class Work>
auto interruptible(Work&& work) -> decltype(work(std::declval<const core::CancelToken&>())) {
  using Result = decltype(work(std::declval<const core::CancelToken&>()));
  core::CancelToken token;
  std::optional<Result> result;
  std::exception_ptr error;
  bool interrupted = false;
  {
    py::gil_scoped_release release;
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    std::thread worker([&] {
      try {
        result.emplace(work(token));
      } catch (...) {
        error = std::current_exception();
      }
      const std::lock_guard lock(mutex);
      done = true;
      finished.notify_one();
    });
    std::unique_lock lock(mutex);
    while (!done) {
      finished.wait_for(lock, std::chrono::milliseconds(20));
      if (done || interrupted) continue;
      lock.unlock();
      {
        py::gil_scoped_acquire acquire;
        if (PyErr_CheckSignals() != 0) {
          PyErr_Clear();
          interrupted = true;
          token.cancel();
        }
      }
      lock.lock();
    }
    lock.unlock();
    worker.join();
  }
  if (interrupted) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }
  if (error) std::rethrow_exception(error);
  return std::move(*result);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw core::Error("out", path, "cannot open for writing");
  out << text;
}

/// `run --json`: the step summary, or the fabric report of a scenario without a model. With
/// `out`, also summary.json, results.h5 and trace.json as `run --out` writes them.
std::string run_json(const sim::Scenario& scenario, const std::string& out_dir,
                     const std::string& engine, bool per_rank, const core::CancelToken& token) {
  const topology::Fabric fabric(scenario.cluster, scenario.fabric);
  if (!scenario.has_job) {
    const topology::Router router(fabric);
    return sim::fabric_only_json(scenario, fabric, router).dump(2) + "\n";
  }
  const sim::StepReport report = sim::simulate_step(scenario, engine, per_rank, &token);
  std::string summary = sim::step_summary_json(scenario, report);
  if (!out_dir.empty()) {
    std::filesystem::create_directories(out_dir);
    write_text(out_dir + "/summary.json", summary);
    write_text(out_dir + "/trace.json", sim::step_trace_json(report));
    sim::write_step_hdf5(out_dir + "/results.h5", report, netsim::link_capacities(fabric));
  }
  return summary;
}

std::string sweep_json(const PyScenario& base, const std::vector<std::string>& vary_args,
                       const sim::SweepSettings& settings, int threads,
                       const core::CancelToken& token) {
  std::vector<sim::Vary> vary;
  vary.reserve(vary_args.size());
  for (const auto& v : vary_args) vary.push_back(sim::parse_vary(v));
  const sim::ScenarioText scenario = sim::ScenarioText::read(base.path());
  const auto points = sim::sweep_points(scenario, base.overrides(), vary);
  std::vector<sim::PointResult> results;
  token.throw_if_cancelled();
  sim::run_points(
      scenario, points, settings,
      threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())),
      [&](const sim::PointResult& r) { results.push_back(r); }, false, &token);
  sim::mark_pareto(results);
  return sim::sweep_results_json(results);
}

/// core::Error -> clustertwin.ScenarioError (a ValueError) carrying file, field, value, reason.
void translate_errors(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const core::Error& e) {
    const py::object type = py::module_::import("clustertwin").attr("ScenarioError");
    const py::object error = type(e.what(), e.file(), e.field(), e.value(), e.reason());
    PyErr_SetObject(type.ptr(), error.ptr());
  } catch (const core::Cancelled&) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
  }
}

}  // namespace
}  // namespace twin::python

PYBIND11_MODULE(_clustertwin, m) {
  using twin::python::interruptible;
  using twin::python::PyScenario;
  namespace sim = twin::sim;
  m.doc() = "Compiled core of the clustertwin package (use `import clustertwin`).";
  py::register_exception_translator(&twin::python::translate_errors);

  py::class_<PyScenario>(m, "_Scenario")
      .def_static("load", &PyScenario::load, py::arg("path"))
      .def_static("default", &PyScenario::default_scenario)
      .def("set", &PyScenario::set, py::arg("key"), py::arg("yaml_value"))
      .def_property_readonly("path", &PyScenario::path)
      .def_property_readonly("overrides", &PyScenario::overrides)
      .def_property_readonly("name", [](const PyScenario& s) { return s.scenario().name; })
      .def_property_readonly("description",
                             [](const PyScenario& s) { return s.scenario().description; })
      .def_property_readonly("source", [](const PyScenario& s) { return s.scenario().source; })
      .def_property_readonly("gpus",
                             [](const PyScenario& s) {
                               const auto& c = s.scenario().cluster;
                               return c.nodes * c.gpus_per_node;
                             })
      .def_property_readonly("has_job", [](const PyScenario& s) { return s.scenario().has_job; })
      .def("to_yaml", [](const PyScenario& s) { return sim::to_yaml(s.scenario()); });

  m.def(
      "_run",
      [](const PyScenario& s, const std::string& out, const std::string& engine, bool per_rank) {
        return interruptible([&](const twin::core::CancelToken& token) {
          return twin::python::run_json(s.scenario(), out, engine, per_rank, token);
        });
      },
      py::arg("scenario"), py::arg("out"), py::arg("engine"), py::arg("per_rank"));

  // The benchmark's baseline (python/bench_run.py): n runs as `run --json` does them, in C++.
  m.def(
      "_run_native_loop",
      [](const PyScenario& s, int n) {
        const twin::core::CancelToken token;
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < n; ++i)
          (void)twin::python::run_json(s.scenario(), "", "native", false, token);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      },
      py::arg("scenario"), py::arg("n"));

  m.def(
      "_campaign",
      [](const PyScenario& s, int trials, std::uint64_t seed, int threads, const std::string& out) {
        sim::CampaignOptions o;
        o.trials = trials;
        o.seed = seed;
        o.threads = threads;
        o.out_dir = out;
        return interruptible([&](const twin::core::CancelToken& token) {
          o.cancel = &token;
          return sim::campaign_json(sim::run_campaign(s.scenario(), o));
        });
      },
      py::arg("scenario"), py::arg("trials"), py::arg("seed"), py::arg("threads"), py::arg("out"));

  m.def(
      "_bom",
      [](const PyScenario& s) {
        const twin::topology::Fabric fabric(s.scenario().cluster, s.scenario().fabric);
        return sim::bom_json(fabric, twin::topology::compute_bom(fabric)).dump(2);
      },
      py::arg("scenario"));

  m.def(
      "_collective",
      [](const PyScenario& s, const std::string& op, int nodes, int gpus_per_node,
         const std::string& sizes, const std::string& algo, const std::string& engine) {
        sim::SweepSpec spec;
        spec.op = op;
        spec.nodes = nodes;
        spec.gpus_per_node = gpus_per_node;
        spec.sizes = sim::parse_sizes(sizes);
        spec.algorithm = algo;
        spec.engine = engine;
        return interruptible([&](const twin::core::CancelToken& token) {
          token.throw_if_cancelled();
          return sim::sweep_json(sim::run_collective_sweep(s.scenario(), spec));
        });
      },
      py::arg("scenario"), py::arg("op"), py::arg("nodes"), py::arg("gpus_per_node"),
      py::arg("sizes"), py::arg("algo"), py::arg("engine"));

  m.def(
      "_validate",
      [](const std::string& directory, int threads) {
        return interruptible([&](const twin::core::CancelToken& token) {
          token.throw_if_cancelled();
          const int n = threads > 0
                            ? threads
                            : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
          return sim::validation_json(sim::validate_with_fit(directory, n));
        });
      },
      py::arg("directory"), py::arg("threads"));

  m.def(
      "_sweep",
      [](const PyScenario& s, const std::vector<std::string>& vary, bool campaign, int trials,
         std::uint64_t seed, int threads) {
        sim::SweepSettings settings;
        settings.campaign = campaign;
        settings.trials = trials;
        settings.seed = seed;
        return interruptible([&](const twin::core::CancelToken& token) {
          return twin::python::sweep_json(s, vary, settings, threads, token);
        });
      },
      py::arg("scenario"), py::arg("vary"), py::arg("campaign"), py::arg("trials"), py::arg("seed"),
      py::arg("threads"));
}
