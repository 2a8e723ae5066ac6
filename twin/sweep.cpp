#include "twin/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "calibrate/profile.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/text.hpp"
#include "h5/writer.hpp"
#include "topology/bom.hpp"
#include "topology/fabric.hpp"
#include "twin/campaign.hpp"
#include "twin/cost_model.hpp"
#include "twin/scenario.hpp"
#include "twin/scenario_schema.hpp"
#include "twin/step_sim.hpp"
#include "twin/yaml_reader.hpp"

namespace twin::sim {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto at = text.find(sep, start);
    out.push_back(text.substr(start, at - start));
    if (at == std::string::npos) break;
    start = at + 1;
  }
  return out;
}

const std::vector<std::string>& metric_names(bool campaign) {
  static const std::vector<std::string> step = {
      "gpus",         "switches",     "cables",
      "capex_usd",    "it_power_kw",  "step_time_s",
      "mfu",          "tokens_per_s", "time_to_train_days",
      "gpu_hour_usd", "run_cost_usd", "usd_per_million_tokens"};
  static const std::vector<std::string> with_campaign = [] {
    auto v = step;
    for (const char* m : {"ettr_p50", "time_to_train_days_p50_failures", "gpu_hours_lost"})
      v.push_back(m);
    return v;
  }();
  return campaign ? with_campaign : step;
}

}  // namespace

double PointResult::metric(const std::string& name) const {
  for (const auto& [k, v] : metrics)
    if (k == name) return v;
  return std::nan("");
}

Vary parse_vary(const std::string& arg, std::size_t max_points) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    throw core::Error("--vary", arg, "expected key=v1,v2,... or key=from:to:step");
  Vary v{arg.substr(0, eq), {}};
  const std::string rhs = arg.substr(eq + 1);
  const auto parts = split(rhs, ':');
  if (parts.size() == 3) {
    double from = 0, to = 0, step = 0;
    if (!detail::parse_real(parts[0], from).empty() || !detail::parse_real(parts[1], to).empty() ||
        !detail::parse_real(parts[2], step).empty())
      throw core::Error("--vary", arg, "a range is from:to:step with finite numbers");
    if (!(step > 0) || to < from)
      throw core::Error("--vary", arg, "empty range (need step > 0 and to >= from)");
    // Count first: a range of a billion values is refused before any is generated.
    const double count = std::floor((to - from) / step + 1e-9) + 1;
    if (count > static_cast<double>(max_points))
      throw core::Error("--vary", arg,
                        fmt::format("{:.0f} values, more than the {} points a sweep may have "
                                    "(raise the cap with --max-points if you mean it)",
                                    count, max_points));
    for (int i = 0;; ++i) {
      const double x = from + i * step;
      if (x > to + 1e-9 * std::abs(step)) break;
      v.values.push_back(fmt::format("{}", x));
    }
  } else if (parts.size() == 1) {
    for (auto& value : split(rhs, ',')) {
      if (value.empty())
        throw core::Error("--vary", arg,
                          "an empty value in the list (two commas, or a trailing one)");
      if (std::find(v.values.begin(), v.values.end(), value) != v.values.end())
        throw core::Error("--vary", arg, "the value '" + value + "' is listed twice");
      v.values.push_back(value);
    }
    if (v.values.size() > max_points)
      throw core::Error("--vary", arg,
                        fmt::format("{} values, more than the {} points a sweep may have (raise "
                                    "the cap with --max-points)",
                                    v.values.size(), max_points));
  } else {
    throw core::Error("--vary", arg, "expected key=v1,v2,... or key=from:to:step");
  }
  if (v.values.empty()) throw core::Error("--vary", arg, "no values");
  return v;
}

std::vector<SweepPoint> sweep_points(const ScenarioText& scenario,
                                     const std::vector<std::string>& base,
                                     const std::vector<Vary>& vary, std::size_t max_points) {
  if (vary.empty()) throw core::Error("--vary", "", "give at least one --vary key=values");
  std::size_t count = 1;
  for (std::size_t i = 0; i < vary.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j)
      if (vary[j].key == vary[i].key)
        throw core::Error("--vary", vary[i].key,
                          "varied twice (the points would cross the key with itself); list all "
                          "its values in one --vary");
    count =
        vary[i].values.size() > max_points / count ? max_points + 1 : count * vary[i].values.size();
  }
  if (count > max_points)
    throw core::Error("--vary", "",
                      fmt::format("the cross product has more than {} points; vary fewer values "
                                  "or raise the cap with --max-points",
                                  max_points));
  // Every key must be a field of the schema and every value must suit it, then load into the
  // scenario, before any work starts.
  for (const auto& v : vary) {
    for (const auto& value : v.values) check_override(v.key, value, "--vary");
    for (const auto& value : v.values) {
      auto overrides = base;
      overrides.push_back(v.key + "=" + value);
      (void)scenario.load(overrides);
    }
  }
  std::vector<SweepPoint> points(1);
  points[0].overrides = base;
  for (const auto& v : vary) {
    std::vector<SweepPoint> next;
    for (const auto& p : points)
      for (const auto& value : v.values) {
        SweepPoint q = p;
        q.overrides.push_back(v.key + "=" + value);
        q.label += (q.label.empty() ? "" : ";") + v.key + "=" + value;
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  for (std::size_t i = 0; i < points.size(); ++i) points[i].index = static_cast<int>(i);
  return points;
}

const char* program_version() {
  return CLUSTERTWIN_VERSION;
}

std::string Fingerprint::text() const {
  return study + "-" + point + "-" + options + "-" + profile + "-" + version;
}

Fingerprint Fingerprint::parse(const std::string& text) {
  const auto parts = split(text, '-');
  if (parts.size() != 5) return {};
  return {parts[0], parts[1], parts[2], parts[3], parts[4]};
}

std::string Fingerprint::difference(const Fingerprint& o) const {
  if (study != o.study) return "they belong to another study (scenario, --set or --vary keys)";
  if (point != o.point) return "the scenario changed since they ran";
  if (options != o.options) return "the options differ (--campaign, --trials, --seed)";
  if (profile != o.profile) return "the hardware profile changed since they ran";
  if (version != o.version) return "another clustertwin version computed them";
  return {};
}

std::string study_fingerprint(const ScenarioText& scenario, const std::vector<std::string>& base,
                              const std::vector<Vary>& vary) {
  std::string text = scenario.resolved(base);
  for (const auto& v : vary) text += "\nvary " + v.key;
  return core::fingerprint(text);
}

Fingerprint point_fingerprint(const std::string& study, const ScenarioText& scenario,
                              const SweepPoint& point, const SweepSettings& s) {
  Fingerprint f;
  f.study = study;
  f.point = core::fingerprint(scenario.resolved(point.overrides));
  f.options = core::fingerprint(
      s.campaign ? fmt::format("campaign trials={} seed={}", s.trials, s.seed) : "step");
  std::string profile_text;
  try {
    const Scenario sc = scenario.load(point.overrides);
    profile_text = calibrate::to_json(calibrate::load_profile(sc.cluster.gpu));
  } catch (const core::Error& e) {
    profile_text = e.what();  // the point will be infeasible for the same reason
  }
  f.profile = core::fingerprint(profile_text);
  f.version = core::fingerprint(program_version());
  return f;
}

ResumePlan plan_resume(const std::map<std::string, PointResult>& earlier,
                       const std::vector<SweepPoint>& points,
                       const std::vector<std::string>& fingerprints, const std::string& where) {
  ResumePlan plan;
  if (earlier.empty() || points.empty()) return plan;
  const Fingerprint study = Fingerprint::parse(fingerprints.front());
  bool same_study = false;
  for (const auto& [label, r] : earlier)
    same_study = same_study || Fingerprint::parse(r.fingerprint).study == study.study;
  if (!same_study)
    throw core::Error("--out", where,
                      "holds the results of another sweep (its scenario, --set overrides or "
                      "--vary keys differ from this one's); choose another --out, or delete it "
                      "to start over");
  std::map<std::string, int> recomputed;
  for (const auto& p : points) {
    const auto it = earlier.find(p.label);
    if (it == earlier.end()) continue;
    const Fingerprint now = Fingerprint::parse(fingerprints[static_cast<std::size_t>(p.index)]);
    const std::string why = now.difference(Fingerprint::parse(it->second.fingerprint));
    if (why.empty())
      plan.reuse.emplace(p.label, it->second);
    else
      ++recomputed[why];
  }
  for (const auto& [why, n] : recomputed)
    plan.notes.push_back(fmt::format("recomputing {} point(s) of {}: {}", n, where, why));
  return plan;
}

PointResult run_point(const ScenarioText& scenario, const SweepPoint& point, const SweepSettings& s,
                      const core::CancelToken* cancel) {
  core::check(cancel);
  PointResult r;
  r.index = point.index;
  r.label = point.label;
  try {
    const Cluster cluster(scenario.load(point.overrides));
    const Scenario& sc = cluster.scenario();
    const topology::Bom bom = topology::compute_bom(cluster.fabric());
    const StepReport step = simulate_step(cluster, "native", false, cancel);
    const double days = sc.training.tokens / step.tokens_per_s / 86400.0;
    double wall_days = days;
    std::vector<std::pair<std::string, double>> campaign;
    if (s.campaign) {
      CampaignOptions o;
      o.trials = s.trials;
      o.seed = s.seed;
      o.threads = 1;
      o.cancel = cancel;
      const CampaignReport c = run_campaign(cluster, o, &step);
      wall_days = c.days.p50;
      double lost = 0;
      for (const auto& [k, h] : c.lost_gpu_hours) lost += h;
      campaign = {{"ettr_p50", c.ettr.p50},
                  {"time_to_train_days_p50_failures", c.days.p50},
                  {"gpu_hours_lost", lost}};
    }
    const CostReport cost =
        price(sc.costs, bom, sc.cluster, sc.fabric, wall_days, sc.training.tokens);
    r.metrics = {{"gpus", bom.gpus},
                 {"switches", bom.switches_total()},
                 {"cables", static_cast<double>(bom.cables_total())},
                 {"capex_usd", cost.capex_usd},
                 {"it_power_kw", cost.it_power_kw},
                 {"step_time_s", step.step_time_s},
                 {"mfu", step.mfu},
                 {"tokens_per_s", step.tokens_per_s},
                 {"time_to_train_days", days},
                 {"gpu_hour_usd", cost.gpu_hour_usd},
                 {"run_cost_usd", cost.run_cost_usd},
                 {"usd_per_million_tokens", cost.usd_per_million_tokens}};
    r.metrics.insert(r.metrics.end(), campaign.begin(), campaign.end());
    r.status = "ok";
  } catch (const core::Cancelled&) {
    throw;  // not a property of the point
  } catch (const core::Error& e) {
    r.status = "infeasible";
    r.reason = e.what();
  } catch (const std::exception& e) {
    r.status = "error";
    r.reason = e.what();
  }
  return r;
}

void run_points(const ScenarioText& scenario, const std::vector<SweepPoint>& points,
                const SweepSettings& s, int threads,
                const std::function<void(const PointResult&)>& done, bool progress,
                const core::CancelToken* cancel) {
  core::ordered_parallel(
      static_cast<int>(points.size()), threads,
      [&](int i) { return run_point(scenario, points[static_cast<std::size_t>(i)], s, cancel); },
      [&](int, const PointResult& r) { done(r); }, progress ? "points" : nullptr);
}

namespace {
/// The workload part of a point's label (model, parallelism, training): Pareto fronts compare
/// hardware options for the same job.
std::string workload_of(const std::string& label) {
  std::string key;
  for (const auto& part : split(label, ';'))
    if (part.rfind("model.", 0) == 0 || part.rfind("parallelism.", 0) == 0 ||
        part.rfind("training.", 0) == 0)
      key += part + ";";
  return key;
}
}  // namespace

void mark_pareto(std::vector<PointResult>& results) {
  const std::string time_key = "time_to_train_days_p50_failures";
  auto time_of = [&](const PointResult& r) {
    const double t = r.metric(time_key);
    return std::isnan(t) ? r.metric("time_to_train_days") : t;
  };
  for (auto& a : results) {
    if (a.status != "ok") continue;
    a.pareto = true;
    for (const auto& b : results) {
      if (&a == &b || b.status != "ok" || workload_of(a.label) != workload_of(b.label)) continue;
      const bool no_worse =
          b.metric("capex_usd") <= a.metric("capex_usd") && time_of(b) <= time_of(a);
      const bool better = b.metric("capex_usd") < a.metric("capex_usd") || time_of(b) < time_of(a);
      if (no_worse && better) {
        a.pareto = false;
        break;
      }
    }
  }
}

std::string csv_header(const SweepSettings& s) {
  std::string h = "index,point,status,fingerprint";
  for (const auto& m : metric_names(s.campaign)) h += "," + m;
  return h + ",reason\n";
}

std::string csv_row(const PointResult& r, const SweepSettings& s) {
  std::string row = fmt::format("{},\"{}\",{},{}", r.index, r.label, r.status, r.fingerprint);
  for (const auto& m : metric_names(s.campaign)) {
    const double v = r.metric(m);
    row += std::isnan(v) ? "," : fmt::format(",{:.17g}", v);
  }
  std::string reason = r.reason;
  std::replace(reason.begin(), reason.end(), '"', '\'');
  std::replace(reason.begin(), reason.end(), '\n', ' ');
  return row + ",\"" + reason + "\"\n";
}

std::map<std::string, PointResult> read_csv(const std::string& text, const SweepSettings& s) {
  std::map<std::string, PointResult> out;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // header
  if (line + "\n" != csv_header(s))
    throw core::Error("", "",
                      fmt::format("its header is not that of a {} sweep with fingerprints (another "
                                  "kind of sweep, or written by an older clustertwin): its rows "
                                  "cannot be matched to this sweep; choose another --out, or "
                                  "delete it to start over",
                                  s.campaign ? "--campaign" : "step-only"));
  while (std::getline(in, line)) {
    // index,"label",status,metrics...,"reason"
    const auto q1 = line.find('"'), q2 = line.find('"', q1 + 1);
    const auto r1 = line.rfind('"', line.size() - 2);
    if (q1 == std::string::npos || q2 == std::string::npos || r1 == std::string::npos || r1 <= q2)
      continue;
    PointResult r;
    if (q1 == 0) continue;
    std::int64_t index = 0;
    std::uint64_t unused = 0;
    if (!detail::parse_integer(line.substr(0, q1 - 1), 0, 1u << 30, index, unused).empty())
      continue;
    r.index = static_cast<int>(index);
    r.label = line.substr(q1 + 1, q2 - q1 - 1);
    const auto fields = split(line.substr(q2 + 2, r1 - q2 - 3), ',');
    if (fields.empty()) continue;
    if (fields.size() < 2) continue;
    r.status = fields[0];
    r.fingerprint = fields[1];
    const auto& names = metric_names(s.campaign);
    for (std::size_t i = 0; i < names.size() && i + 2 < fields.size(); ++i) {
      double value = 0;
      if (!fields[i + 2].empty() && detail::parse_real(fields[i + 2], value).empty())
        r.metrics.emplace_back(names[i], value);
    }
    r.reason = line.substr(r1 + 1, line.size() - r1 - 2);
    if (r.status == "ok" || r.status == "infeasible") out[r.label] = std::move(r);
  }
  return out;
}

std::string sweep_results_table(const std::vector<PointResult>& results, const SweepSettings& s) {
  std::size_t width = 5;
  for (const auto& r : results) width = std::max(width, r.label.size());
  std::string out =
      fmt::format("{:<4} {:<{}} {:>9} {:>8} {:>6} {:>7} {:>11} {:>9}  {}\n", "#", "point", width,
                  "capex M$", "step s", "MFU", "days", s.campaign ? "days (fail)" : "$/Mtok",
                  "power kW", "pareto (same workload)");
  for (const auto& r : results) {
    if (r.status != "ok") {
      out += fmt::format("{:<4} {:<{}} {}: {}\n", r.index, r.label, width, r.status, r.reason);
      continue;
    }
    out +=
        fmt::format("{:<4} {:<{}} {:>9.1f} {:>8.3f} {:>5.1f}% {:>7.1f} {:>11.2f} {:>9.0f}  {}\n",
                    r.index, r.label, width, r.metric("capex_usd") / 1e6, r.metric("step_time_s"),
                    100 * r.metric("mfu"), r.metric("time_to_train_days"),
                    s.campaign ? r.metric("time_to_train_days_p50_failures")
                               : r.metric("usd_per_million_tokens"),
                    r.metric("it_power_kw"), r.pareto ? "*" : "");
  }
  return out;
}

std::string sweep_results_json(const std::vector<PointResult>& results) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& r : results) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : r.metrics) m[k] = v;
    arr.push_back({{"index", r.index},
                   {"point", r.label},
                   {"status", r.status},
                   {"reason", r.reason},
                   {"pareto", r.pareto},
                   {"metrics", m}});
  }
  return nlohmann::ordered_json{{"points", arr}}.dump(2) + "\n";
}

struct SweepHdf5::Impl {
  explicit Impl(const std::string& path) : file(path, "sweep.h5", "--out") {}
  h5::File file;
};

SweepHdf5::SweepHdf5(const std::string& path) : impl_(new Impl(path)) {}

SweepHdf5::~SweepHdf5() {
  delete impl_;
}

void SweepHdf5::write(const PointResult& r) {
  h5::Group g = impl_->file.root().group(fmt::format("point_{:05d}", r.index));
  g.attribute("point", r.label);
  g.attribute("status", r.status);
  g.attribute("fingerprint", r.fingerprint);
  g.attribute("reason", r.reason);
  for (const auto& [k, v] : r.metrics) g.attribute(k, v);
  impl_->file.flush();
}

}  // namespace twin::sim
