#include "netsim/native_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

#include "core/error.hpp"

namespace twin::netsim {
namespace {

constexpr double kSaturated = 1e-12;  // a link is full when less than this fraction is left
constexpr double kDoneBytes = 1e-9;   // a flow is done when less than this fraction is left
constexpr double kSameTime = 1e-12;   // relative tolerance for simultaneous events

enum class Status : std::uint8_t { waiting, latency, active, done };

struct Event {
  double time;
  std::uint64_t sequence;
  std::uint32_t flow;
  std::uint32_t version;  // completion events are stale when the flow's rate changed since
  bool activation;
};

struct Later {
  bool operator()(const Event& a, const Event& b) const {
    if (a.time != b.time) return a.time > b.time;
    return a.sequence > b.sequence;
  }
};

class Run {
 public:
  Run(const FlowSet& set, const std::vector<double>& capacity) : set_(set), capacity_(capacity) {
    const std::size_t n = set.flows.size();
    hop_begin_.reserve(n + 1);
    hop_begin_.push_back(0);
    for (std::size_t f = 0; f < n; ++f) {
      for (const auto& hop : set.flows[f].hops) {
        if (hop.link.index() >= capacity.size())
          throw core::Error(fmt::format("flow {}", f), std::to_string(hop.link.value()),
                            "route uses a link that is not in the fabric");
        hop_link_.push_back(static_cast<std::uint32_t>(hop.link.index()));
        hop_coef_.push_back(hop.fraction);
      }
      hop_begin_.push_back(static_cast<std::uint32_t>(hop_link_.size()));
    }
    hop_pos_.assign(hop_link_.size(), 0);
    hop_flow_.resize(hop_link_.size());
    for (std::size_t f = 0; f < n; ++f)
      for (std::uint32_t h = hop_begin_[f]; h < hop_begin_[f + 1]; ++h)
        hop_flow_[h] = static_cast<std::uint32_t>(f);
    link_flows_.resize(capacity.size());
    remaining_.resize(n);
    rate_.assign(n, 0.0);
    last_update_.assign(n, 0.0);
    version_.assign(n, 0);
    status_.assign(n, Status::waiting);
    deps_left_.assign(n, 0);
    dependents_.resize(n);
    link_stamp_.assign(capacity.size(), 0);
    link_solved_.assign(capacity.size(), 0);
    flow_stamp_.assign(n, 0);
    frozen_stamp_.assign(n, 0);
    rem_.assign(capacity.size(), 0.0);
    weight_.assign(capacity.size(), 0.0);
    result_.transfer_start_s.assign(n, 0.0);
    result_.finish_s.assign(n, 0.0);
    result_.link_bytes.assign(capacity.size(), 0.0);
    for (std::size_t f = 0; f < n; ++f) {
      const Flow& flow = set.flows[f];
      if (!(flow.bytes >= 0) || !(flow.latency_s >= 0) || !(flow.start_s >= 0))
        throw core::Error(fmt::format("flow {}", f), fmt::format("{} B", flow.bytes),
                          "bytes, start and latency must be non-negative");
      if (!(flow.weight > 0) || !std::isfinite(flow.weight))
        throw core::Error(fmt::format("flow {}", f), fmt::format("weight {}", flow.weight),
                          "a flow's weight (member flows it stands for) must be positive");
      remaining_[f] = flow.bytes;
      for (std::uint32_t dep : flow.after) {
        if (dep >= n || dep == f)
          throw core::Error(fmt::format("flow {}", f), std::to_string(dep),
                            "depends on a flow that does not exist (or on itself)");
        dependents_[dep].push_back(static_cast<std::uint32_t>(f));
        ++deps_left_[f];
      }
    }
  }

  FlowResult execute() {
    for (std::size_t f = 0; f < set_.flows.size(); ++f)
      if (deps_left_[f] == 0) schedule_activation(static_cast<std::uint32_t>(f), 0.0);
    while (!events_.empty()) {
      const double now = events_.top().time;
      const double horizon = now + kSameTime * std::max(1.0, std::abs(now));
      dirty_links_.clear();
      while (!events_.empty() && events_.top().time <= horizon) {
        const Event e = events_.top();
        events_.pop();
        if (e.activation) {
          activate(e.flow, now);
        } else if (status_[e.flow] == Status::active && version_[e.flow] == e.version) {
          finish(e.flow, now);
        }
      }
      resolve(now);
    }
    for (std::size_t f = 0; f < set_.flows.size(); ++f) {
      if (status_[f] != Status::done)
        throw core::Error(fmt::format("flow {}", f), "",
                          "never finished: its dependencies form a cycle");
      result_.makespan_s = std::max(result_.makespan_s, result_.finish_s[f]);
    }
    return std::move(result_);
  }

 private:
  void push(double time, std::uint32_t flow, bool activation) {
    events_.push(Event{time, sequence_++, flow, version_[flow], activation});
  }

  void schedule_activation(std::uint32_t f, double ready) {
    const Flow& flow = set_.flows[f];
    status_[f] = Status::latency;
    push(std::max(ready, flow.start_s) + flow.latency_s, f, true);
  }

  void activate(std::uint32_t f, double now) {
    result_.transfer_start_s[f] = now;
    last_update_[f] = now;
    if (remaining_[f] <= 0 || hop_begin_[f] == hop_begin_[f + 1]) {
      complete(f, now);  // nothing to send, or no link to cross
      return;
    }
    status_[f] = Status::active;
    for (std::uint32_t h = hop_begin_[f]; h < hop_begin_[f + 1]; ++h) {
      const std::uint32_t l = hop_link_[h];
      if (!(capacity_[l] > 0))
        throw core::Error(fmt::format("flow {}", f), fmt::format("link {}", l),
                          "route crosses a failed link (capacity 0)");
      hop_pos_[h] = static_cast<std::uint32_t>(link_flows_[l].size());
      link_flows_[l].push_back(h);
      dirty_links_.push_back(l);
    }
  }

  /// Brings a flow's transferred bytes up to `now` at its current rate.
  void advance(std::uint32_t f, double now) {
    const double moved = std::min(remaining_[f], rate_[f] * (now - last_update_[f]));
    if (moved > 0) {
      remaining_[f] -= moved;
      for (std::uint32_t h = hop_begin_[f]; h < hop_begin_[f + 1]; ++h)
        result_.link_bytes[hop_link_[h]] += moved * hop_coef_[h];
    }
    last_update_[f] = now;
  }

  void finish(std::uint32_t f, double now) {
    advance(f, now);
    for (std::uint32_t h = hop_begin_[f]; h < hop_begin_[f + 1]; ++h) {
      const std::uint32_t l = hop_link_[h];
      auto& list = link_flows_[l];
      const std::uint32_t moved_hop = list.back();
      list[hop_pos_[h]] = moved_hop;
      hop_pos_[moved_hop] = hop_pos_[h];
      list.pop_back();
      dirty_links_.push_back(l);
    }
    complete(f, now);
  }

  void complete(std::uint32_t f, double now) {
    // Whatever is left is below the completion tolerance: account it to the links.
    for (std::uint32_t h = hop_begin_[f]; h < hop_begin_[f + 1]; ++h)
      result_.link_bytes[hop_link_[h]] += remaining_[f] * hop_coef_[h];
    remaining_[f] = 0;
    rate_[f] = 0;
    status_[f] = Status::done;
    result_.finish_s[f] = now;
    for (std::uint32_t d : dependents_[f])
      if (--deps_left_[d] == 0) schedule_activation(d, now);
  }

  /// Re-solves max-min rates on the components touched by this batch of events.
  void resolve(double now) {
    ++batch_;
    for (std::uint32_t seed : dirty_links_) {
      if (link_solved_[seed] == batch_ || link_flows_[seed].empty()) continue;
      ++stamp_;
      collect_component(seed);
      for (std::uint32_t l : comp_links_) link_solved_[l] = batch_;
      solve_component(now);
    }
  }

  void collect_component(std::uint32_t seed) {
    comp_links_.clear();
    comp_flows_.clear();
    link_stamp_[seed] = stamp_;
    comp_links_.push_back(seed);
    for (std::size_t i = 0; i < comp_links_.size(); ++i) {
      for (std::uint32_t h : link_flows_[comp_links_[i]]) {
        const std::uint32_t f = hop_flow_[h];
        if (flow_stamp_[f] == stamp_) continue;
        flow_stamp_[f] = stamp_;
        comp_flows_.push_back(f);
        for (std::uint32_t h2 = hop_begin_[f]; h2 < hop_begin_[f + 1]; ++h2) {
          const std::uint32_t l = hop_link_[h2];
          if (link_stamp_[l] != stamp_) {
            link_stamp_[l] = stamp_;
            comp_links_.push_back(l);
          }
        }
      }
    }
  }

  void solve_component(double now) {
    ++result_.rate_solves;
    for (std::uint32_t f : comp_flows_) advance(f, now);
    for (std::uint32_t l : comp_links_) {
      rem_[l] = capacity_[l];
      weight_[l] = 0;
    }
    for (std::uint32_t f : comp_flows_) {
      const double w = set_.flows[f].weight;
      for (std::uint32_t h = hop_begin_[f]; h < hop_begin_[f + 1]; ++h)
        weight_[hop_link_[h]] += hop_coef_[h] * w;
    }

    // Progressive filling: every unfrozen flow runs at `level` times its weight.
    ++frozen_generation_;
    std::size_t unfrozen = comp_flows_.size();
    double level = 0;
    while (unfrozen > 0) {
      double step = std::numeric_limits<double>::infinity();
      for (std::uint32_t l : comp_links_)
        if (weight_[l] > 0) step = std::min(step, rem_[l] / weight_[l]);
      level += step;
      for (std::uint32_t l : comp_links_)
        if (weight_[l] > 0) rem_[l] -= step * weight_[l];
      for (std::uint32_t l : comp_links_) {
        if (weight_[l] <= 0 || rem_[l] > kSaturated * capacity_[l]) continue;
        for (std::uint32_t h : link_flows_[l]) {
          const std::uint32_t f = hop_flow_[h];
          if (frozen_stamp_[f] == frozen_generation_) continue;
          frozen_stamp_[f] = frozen_generation_;
          const double w = set_.flows[f].weight;
          rate_[f] = level * w;
          --unfrozen;
          for (std::uint32_t h2 = hop_begin_[f]; h2 < hop_begin_[f + 1]; ++h2) {
            const std::uint32_t l2 = hop_link_[h2];
            weight_[l2] -= hop_coef_[h2] * w;
            if (weight_[l2] < 1e-12) weight_[l2] = 0;
          }
        }
      }
    }
    for (std::uint32_t f : comp_flows_) {
      ++version_[f];
      if (remaining_[f] <= kDoneBytes * set_.flows[f].bytes) {
        push(now, f, false);  // done within tolerance: finish in this batch's next round
      } else {
        push(now + remaining_[f] / rate_[f], f, false);
      }
    }
  }

 private:
  const FlowSet& set_;
  const std::vector<double>& capacity_;
  std::vector<std::uint32_t> hop_begin_, hop_link_, hop_pos_, hop_flow_;
  std::vector<double> hop_coef_;
  std::vector<std::vector<std::uint32_t>> link_flows_;  // active hops per link
  std::vector<double> remaining_, rate_, last_update_;
  std::vector<std::uint32_t> version_;
  std::vector<Status> status_;
  std::vector<std::uint32_t> deps_left_;
  std::vector<std::vector<std::uint32_t>> dependents_;
  std::priority_queue<Event, std::vector<Event>, Later> events_;
  std::uint64_t sequence_ = 0;
  std::vector<std::uint32_t> dirty_links_;
  std::vector<std::uint64_t> link_stamp_, link_solved_, flow_stamp_, frozen_stamp_;
  std::uint64_t stamp_ = 0, batch_ = 0, frozen_generation_ = 0;
  std::vector<std::uint32_t> comp_links_, comp_flows_;
  std::vector<double> rem_, weight_;
  FlowResult result_;
};

}  // namespace

FlowResult NativeEngine::run(const FlowSet& flows, const std::vector<double>& capacity_Bps) {
  Run run(flows, capacity_Bps);
  return run.execute();
}

}  // namespace twin::netsim
