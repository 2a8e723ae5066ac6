#include "topology/lft.hpp"

#include <fmt/format.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <unordered_map>

#include "core/error.hpp"
#include "topology/routing.hpp"

namespace twin::topology {

namespace {

int switch_count(const Fabric& f) {
  const auto& g = f.geometry();
  return g.leaves + g.spines + g.cores;
}

std::string adapter_name(const Fabric& f, int nic) {
  return fmt::format("{} rail {}", f.host_name(f.host_of_nic(nic)), f.rail_of_nic(nic));
}

/// Per switch, per port: the link leaving the switch through that port (invalid: no cable).
std::vector<std::vector<LinkId>> out_links(const Fabric& f) {
  const std::size_t first = f.leaf(0).index();
  std::vector<std::vector<LinkId>> out(static_cast<std::size_t>(switch_count(f)));
  auto put = [&](NodeId sw, int port, LinkId link) {
    auto& ports = out[sw.index() - first];
    if (ports.size() <= static_cast<std::size_t>(port))
      ports.resize(static_cast<std::size_t>(port) + 1);
    ports[static_cast<std::size_t>(port)] = link;
  };
  for (const Cable& c : f.cables()) {
    put(f.link(c.down).src, c.upper_port, c.down);
    if (c.kind != LinkKind::nic_leaf) put(f.link(c.up).src, c.lower_port, c.up);
  }
  return out;
}

}  // namespace

ForwardingTables::ForwardingTables(std::string_view text, const std::string& source,
                                   const Fabric& fabric)
    : source_(source), nics_(static_cast<std::size_t>(fabric.nic_count())) {
  if (!fabric.is_explicit())
    throw core::Error("fabric.lfts", source,
                      "forwarding tables need an imported fabric (fabric.file): a generated "
                      "fabric has no real switches to program");
  const int switches = switch_count(fabric);
  ports_.assign(static_cast<std::size_t>(switches) * nics_, 0);
  const FabricPlan& plan = fabric.plan();
  std::unordered_map<std::uint64_t, int> switch_of_guid, nic_of_guid;
  for (int s = 0; s < switches; ++s)
    switch_of_guid[plan.switches[static_cast<std::size_t>(s)].guid] = s;
  for (const PlanNic& n : plan.nics) nic_of_guid[n.guid] = n.host * plan.rails + n.rail;

  static const std::regex header(
      R"(Unicast lids \[0x[0-9a-fA-F]+-0x[0-9a-fA-F]+\] of switch .* guid 0x([0-9a-fA-F]+) \((.*)\):\s*)");
  static const std::regex entry(
      R"(0x([0-9a-fA-F]+)\s+(\d+)\s*:\s*\((Channel Adapter|Switch|Router) portguid 0x([0-9a-fA-F]+):.*\)\s*)");
  static const std::regex bare_entry(R"(0x[0-9a-fA-F]+\s+\d+\s*)");
  static const std::regex skip(
      R"(\s*(Lid\s+Out\s+Destination|Port\s+Info|#.*)?\s*|\d+ valid lids dumped\s*)");

  std::istringstream in{std::string(text)};
  std::string line;
  int number = 0, current = -1;
  std::vector<char> seen(ports_.size(), 0);
  auto fail = [&](const std::string& why) {
    return core::Error("fabric.lfts", source, fmt::format("line {}: {}", number, why));
  };
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    if (std::regex_match(line, m, header)) {
      const auto guid = std::stoull(m[1].str(), nullptr, 16);
      const auto it = switch_of_guid.find(guid);
      if (it == switch_of_guid.end())
        throw fail(fmt::format("switch guid 0x{:016x} ({}) is not in the fabric's dump", guid,
                               m[2].str()));
      current = it->second;
      ++tables_;
    } else if (std::regex_match(line, m, entry)) {
      if (current < 0) throw fail("a table entry before any 'Unicast lids ... of switch' line");
      const int port = std::stoi(m[2].str());
      const PlanSwitch& sw = plan.switches[static_cast<std::size_t>(current)];
      if (port > sw.ports)
        throw fail(fmt::format("port {} is past {}'s {} ports", port, sw.name, sw.ports));
      if (m[3].str() != "Channel Adapter") continue;  // switch and router LIDs carry no jobs
      const auto guid = std::stoull(m[4].str(), nullptr, 16);
      const auto it = nic_of_guid.find(guid);
      if (it == nic_of_guid.end())
        throw fail(fmt::format("adapter portguid 0x{:016x} is not in the fabric's dump", guid));
      if (port == 0)
        throw fail(fmt::format("{} sends adapter {} to port 0 (itself)", sw.name,
                               adapter_name(fabric, it->second)));
      const std::size_t k =
          static_cast<std::size_t>(current) * nics_ + static_cast<std::size_t>(it->second);
      if (seen[k] != 0)
        throw fail(fmt::format("{} has two entries for adapter {}", sw.name,
                               adapter_name(fabric, it->second)));
      seen[k] = 1;
      ports_[k] = static_cast<std::uint16_t>(port);
    } else if (std::regex_match(line, bare_entry)) {
      throw fail(
          "an entry without its destination info: dump the tables with it (ibroute's default, "
          "not -n), it maps each LID to an adapter");
    } else if (!std::regex_match(line, skip)) {
      throw fail(
          "expected 'Unicast lids [..] of switch .. guid 0x.. (..):' or "
          "'0x<lid> <port> : (<type> portguid 0x<guid>: ..)', got '" +
          line.substr(0, 80) + "'");
    }
  }
  if (tables_ == 0) throw core::Error("fabric.lfts", source, "no switch tables in the file");
  out_ = out_links(fabric);
}

ForwardingTables ForwardingTables::read(const std::string& path, const Fabric& fabric) {
  std::ifstream in(path);
  if (!in) throw core::Error("fabric.lfts", path, "cannot open the forwarding-table file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ForwardingTables(buffer.str(), path, fabric);
}

double ForwardingTables::route_to(Route& route, const Fabric& fabric, const FabricState* state,
                                  int src_leaf, int src_nic, int dst_nic) const {
  const std::size_t first = fabric.leaf(0).index();
  const LinkId last = fabric.cable(fabric.nic_cable(dst_nic)).down;
  const auto fail = [&](const std::string& why) {
    return core::Error(
        "route",
        fmt::format("{} -> {}", adapter_name(fabric, src_nic), adapter_name(fabric, dst_nic)),
        fmt::format("the forwarding tables of {}: {}", source_, why));
  };
  double latency_s = 0;
  int s = src_leaf;
  const int switches = static_cast<int>(out_.size());
  for (int hops = 0;; ++hops) {
    const std::string name =
        fabric.switch_label(NodeId::from_index(first + static_cast<std::size_t>(s)));
    if (hops > switches) throw fail("a forwarding loop through " + name);
    const int p = port(s, dst_nic);
    if (p == 0) throw fail(name + " has no entry for the destination");
    const auto& ports = out_[static_cast<std::size_t>(s)];
    if (static_cast<std::size_t>(p) >= ports.size() || !ports[static_cast<std::size_t>(p)].valid())
      throw fail(fmt::format("{} sends it out of port {}, which has no cable", name, p));
    const LinkId l = ports[static_cast<std::size_t>(p)];
    if (state != nullptr && !state->usable(l))
      throw fail(fmt::format("{} sends it out of port {}, whose cable is down", name, p));
    if (l == last) return latency_s;
    const Link& link = fabric.link(l);
    if (!fabric.is_switch(link.dst))
      throw fail(fmt::format("{} sends it out of port {} to another adapter", name, p));
    route.hops.push_back(Hop{l, 1.0});
    latency_s += link.latency_s;
    ++route.fabric_hops;
    s = static_cast<int>(link.dst.index() - first);
  }
}

void write_lfts(std::ostream& out, const Fabric& fabric, const Router& router) {
  const int switches = switch_count(fabric);
  const auto nics = static_cast<std::size_t>(fabric.nic_count());
  const std::size_t first = fabric.leaf(0).index();
  const FabricPlan& plan = fabric.plan();
  std::vector<int> plan_nic(nics, -1);
  for (std::size_t i = 0; i < plan.nics.size(); ++i)
    plan_nic[static_cast<std::size_t>(plan.nics[i].host * plan.rails + plan.nics[i].rail)] =
        static_cast<int>(i);
  // One source adapter per leaf reaches every destination through every switch its route
  // crosses; D-mod-k's choice at a switch depends only on the destination.
  std::vector<int> source_of_leaf(static_cast<std::size_t>(fabric.geometry().leaves), -1);
  for (int n = 0; n < fabric.nic_count(); ++n)
    if (fabric.nic_present(n) &&
        source_of_leaf[static_cast<std::size_t>(fabric.leaf_of_nic(n))] < 0)
      source_of_leaf[static_cast<std::size_t>(fabric.leaf_of_nic(n))] = n;
  std::vector<int> port(static_cast<std::size_t>(switches) * nics, 0);
  for (int dst = 0; dst < fabric.nic_count(); ++dst) {
    if (!fabric.nic_present(dst)) continue;
    for (int src : source_of_leaf) {
      if (src < 0 || src == dst) continue;
      for (const Hop& h : router.nic_route(src, dst).hops) {
        const Link& l = fabric.link(h.link);
        if (!fabric.is_switch(l.src)) continue;
        const Cable& c = fabric.cable(l.cable);
        port[(l.src.index() - first) * nics + static_cast<std::size_t>(dst)] =
            h.link == c.up ? c.lower_port : c.upper_port;
      }
    }
  }
  const int first_nic_lid = switches + 1;
  for (int s = 0; s < switches; ++s) {
    const PlanSwitch& sw = plan.switches[static_cast<std::size_t>(s)];
    out << fmt::format("Unicast lids [0x1-0x{:x}] of switch Lid {} guid 0x{:016x} ({}):\n",
                       first_nic_lid + fabric.nic_count() - 1, s + 1, sw.guid, sw.name)
        << "  Lid  Out   Destination\n       Port     Info \n";
    int valid = 0;
    for (std::size_t n = 0; n < nics; ++n) {
      const int p = port[static_cast<std::size_t>(s) * nics + n];
      if (p == 0 || plan_nic[n] < 0) continue;
      const PlanNic& nic = plan.nics[static_cast<std::size_t>(plan_nic[n])];
      out << fmt::format("0x{:04x} {:03d} : (Channel Adapter portguid 0x{:016x}: '{}')\n",
                         first_nic_lid + static_cast<int>(n), p, nic.guid, nic.adapter);
      ++valid;
    }
    out << fmt::format("{} valid lids dumped \n", valid);
  }
}

}  // namespace twin::topology
