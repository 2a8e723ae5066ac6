#include "netsim/simgrid_engine.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <simgrid/s4u.hpp>
#include <string>

#include "core/error.hpp"

namespace twin::netsim {
namespace {

namespace s4u = simgrid::s4u;

/// A flow of weight k runs as k concurrent member comms (SimGrid has no per-comm share weight).
constexpr double kMaxWeight = 4096;

void check_supported(const FlowSet& set) {
  std::map<std::pair<int, int>, const Flow*> by_pair;
  for (std::size_t f = 0; f < set.flows.size(); ++f) {
    const Flow& flow = set.flows[f];
    if (flow.src_gpu < 0 || flow.dst_gpu < 0 || flow.src_gpu == flow.dst_gpu)
      throw core::Error(fmt::format("flow {}", f), "",
                        "the SimGrid backend takes GPU-to-GPU flows between distinct GPUs");
    for (const auto& hop : flow.hops)
      if (hop.fraction != 1.0)
        throw core::Error(fmt::format("flow {}", f), "",
                          "the SimGrid backend takes single-path flows (no adaptive split)");
    if (flow.hops.empty())
      throw core::Error(fmt::format("flow {}", f), "", "the SimGrid backend needs a route");
    if (!(flow.weight >= 1) || flow.weight > kMaxWeight || flow.weight != std::floor(flow.weight))
      throw core::Error(fmt::format("flow {}", f), fmt::format("weight {}", flow.weight),
                        fmt::format("the SimGrid backend runs a flow of weight k as k member "
                                    "flows: k must be a whole number in [1, {}]",
                                    kMaxWeight));
    auto [it, inserted] = by_pair.try_emplace({flow.src_gpu, flow.dst_gpu}, &flow);
    if (!inserted) {
      const auto& a = it->second->hops;
      const bool same = a.size() == flow.hops.size() &&
                        std::equal(a.begin(), a.end(), flow.hops.begin(),
                                   [](const auto& x, const auto& y) { return x.link == y.link; });
      if (!same)
        throw core::Error(fmt::format("flow {}", f), "",
                          "SimGrid's Full routing holds one route per GPU pair; this pair has two");
    }
  }
}

/// Runs inside the child process: builds the platform, simulates, returns finish times.
FlowResult simulate(const FlowSet& set, const std::vector<double>& capacity) {
  std::vector<std::string> args = {
      "clustertwin-netsim", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
      "--cfg=network/TCP-gamma:0", "--cfg=network/optim:Lazy", "--cfg=surf/precision:1e-13",
      // One actor per flow: thousands of actors. SimGrid's default
      // 8 MiB stack plus a guard page costs two memory mappings
      // each, and Linux allows 65,530 (vm.max_map_count): 16,384
      // ring flows of 2,048 GPUs fail to protect their stacks. An
      // actor here only sleeps and sends (no deep calls): 64 KiB
      // stacks without guard pages are one mapping each.
      "--cfg=contexts/stack-size:64", "--cfg=contexts/guard-size:0", "--log=root.thres:critical"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  s4u::Engine engine(&argc, argv.data());

  auto* zone = s4u::create_full_zone("fabric");
  std::map<int, s4u::Host*> hosts;
  std::map<std::uint32_t, s4u::Link*> links;
  auto host = [&](int gpu) {
    auto [it, inserted] = hosts.try_emplace(gpu, nullptr);
    if (inserted) it->second = zone->create_host(fmt::format("gpu{}", gpu), 1e9)->seal();
    return it->second;
  };
  std::map<std::pair<int, int>, bool> routed;
  for (const Flow& flow : set.flows) {
    s4u::Host* src = host(flow.src_gpu);
    s4u::Host* dst = host(flow.dst_gpu);
    if (!routed.try_emplace({flow.src_gpu, flow.dst_gpu}, true).second) continue;
    std::vector<s4u::LinkInRoute> route;
    for (const auto& hop : flow.hops) {
      const auto l = static_cast<std::uint32_t>(hop.link.index());
      auto [it, inserted] = links.try_emplace(l, nullptr);
      if (inserted)
        it->second =
            zone->create_link(fmt::format("l{}", l), capacity.at(l))->set_latency(0)->seal();
      route.emplace_back(it->second);
    }
    zone->add_route(src->get_netpoint(), dst->get_netpoint(), nullptr, nullptr, route, false);
  }
  zone->seal();

  FlowResult result;
  const std::size_t n = set.flows.size();
  result.transfer_start_s.assign(n, 0);
  result.finish_s.assign(n, 0);
  result.link_bytes.assign(capacity.size(), 0);
  std::vector<std::uint32_t> deps_left(n, 0);
  std::vector<std::vector<std::uint32_t>> dependents(n);
  for (std::size_t f = 0; f < n; ++f)
    for (auto d : set.flows[f].after) {
      dependents[d].push_back(static_cast<std::uint32_t>(f));
      ++deps_left[f];
    }

  // One actor per flow: it waits for its start, pays its latency, sends, records the finish
  // and starts the flows that were waiting for it. (A single driver calling wait_any over all
  // pending comms costs O(flows) per completion: 9 s instead of 0.3 s for 4,096 flows.)
  std::function<void(std::uint32_t, double)> spawn = [&](std::uint32_t f, double ready) {
    const Flow& flow = set.flows[f];
    s4u::Actor::create("flow", hosts.at(flow.src_gpu), [&, f, ready] {
      const Flow& me = set.flows[f];
      s4u::this_actor::sleep_until(std::max(ready, me.start_s) + me.latency_s);
      result.transfer_start_s[f] = s4u::Engine::get_clock();
      if (me.weight == 1) {
        s4u::Comm::sendto(hosts.at(me.src_gpu), hosts.at(me.dst_gpu),
                          static_cast<std::uint64_t>(std::llround(me.bytes)));
      } else {
        std::vector<s4u::CommPtr> members;
        const auto count = static_cast<int>(me.weight);
        for (int k = 0; k < count; ++k)
          members.push_back(
              s4u::Comm::sendto_async(hosts.at(me.src_gpu), hosts.at(me.dst_gpu),
                                      static_cast<std::uint64_t>(std::llround(me.bytes / count))));
        for (auto& comm : members) comm->wait();
      }
      const double t = s4u::Engine::get_clock();
      result.finish_s[f] = t;
      for (std::uint32_t d : dependents[f])
        if (--deps_left[d] == 0) spawn(d, t);
    });
  };
  for (std::uint32_t f = 0; f < n; ++f)
    if (deps_left[f] == 0) spawn(f, 0.0);
  engine.run();
  for (double t : result.finish_s) result.makespan_s = std::max(result.makespan_s, t);
  return result;
}

void write_all(int fd, const void* data, std::size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t w = ::write(fd, p, bytes);
    if (w <= 0) _exit(3);
    p += w;
    bytes -= static_cast<std::size_t>(w);
  }
}

}  // namespace

FlowResult SimgridEngine::run(const FlowSet& set, const std::vector<double>& capacity) {
  check_supported(set);
  if (set.flows.empty()) return FlowResult{};
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("simgrid engine: pipe() failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("simgrid engine: fork() failed");
  if (pid == 0) {
    ::close(fds[0]);
    try {
      const FlowResult r = simulate(set, capacity);
      const std::uint64_t n = r.finish_s.size();
      write_all(fds[1], &n, sizeof n);
      write_all(fds[1], r.transfer_start_s.data(), n * sizeof(double));
      write_all(fds[1], r.finish_s.data(), n * sizeof(double));
      _exit(0);
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      write_all(fds[1], msg.data(), msg.size());
      _exit(2);
    }
  }
  ::close(fds[1]);
  std::string bytes;
  char buffer[1 << 16];
  for (ssize_t r; (r = ::read(fds[0], buffer, sizeof buffer)) > 0;)
    bytes.append(buffer, static_cast<std::size_t>(r));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("simgrid engine: the simulation process failed: " + bytes);
  FlowResult result;
  std::uint64_t n = 0;
  if (bytes.size() < sizeof n) throw std::runtime_error("simgrid engine: short result");
  std::memcpy(&n, bytes.data(), sizeof n);
  if (n != set.flows.size() || bytes.size() != sizeof n + 2 * n * sizeof(double))
    throw std::runtime_error("simgrid engine: malformed result");
  result.transfer_start_s.resize(n);
  result.finish_s.resize(n);
  std::memcpy(result.transfer_start_s.data(), bytes.data() + sizeof n, n * sizeof(double));
  std::memcpy(result.finish_s.data(), bytes.data() + sizeof n + n * sizeof(double),
              n * sizeof(double));
  result.link_bytes.assign(capacity.size(), 0);
  for (std::size_t f = 0; f < n; ++f) {
    for (const auto& hop : set.flows[f].hops)
      result.link_bytes[hop.link.index()] += set.flows[f].bytes;
    result.makespan_s = std::max(result.makespan_s, result.finish_s[f]);
  }
  return result;
}

}  // namespace twin::netsim
