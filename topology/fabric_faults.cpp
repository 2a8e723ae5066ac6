#include "topology/fabric_faults.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace twin::topology {
namespace {

constexpr const char* kSpeedsLowToHigh[] = {"SDR", "DDR", "QDR", "FDR10", "FDR",
                                            "EDR", "HDR", "NDR", "XDR"};

void rebuild_links(IbnetFile& file) {
  file.links.clear();
  for (std::size_t n = 0; n < file.nodes.size(); ++n) {
    const IbNode& node = file.nodes[n];
    for (int port = 1; port <= node.port_count; ++port) {
      const IbPortLink& p = node.ports[static_cast<std::size_t>(port)];
      const auto self = static_cast<int>(n);
      if (p.peer < 0 || !(self < p.peer || (self == p.peer && port < p.peer_port))) continue;
      file.links.push_back(IbLink{self, port, p.peer, p.peer_port, p.width, p.speed,
                                  p.width * lane_gbps(p.speed), p.line});
    }
  }
}

std::string end_name(const IbnetFile& f, int node, int port) {
  const IbNode& n = f.nodes[static_cast<std::size_t>(node)];
  return fmt::format("{}[{}]", n.description, port);
}

bool is_switch(const IbnetFile& f, int n) {
  return f.nodes[static_cast<std::size_t>(n)].type == IbNodeType::switch_node;
}

bool is_aggregation(const IbnetFile& f, int n) {
  return f.nodes[static_cast<std::size_t>(n)].description.find("Aggregation Node") !=
         std::string::npos;
}

}  // namespace

IbnetFile to_ibnetdiscover(const Fabric& fabric) {
  IbnetFile out;
  out.source = "<generated>";
  std::vector<int> ib_of(fabric.node_count(), -1);
  const int radix = fabric.spec().switch_radix;
  for (std::size_t i = 0; i < fabric.node_count(); ++i) {
    const NodeId id = NodeId::from_index(i);
    const Node& n = fabric.node(id);
    IbNode node;
    if (fabric.is_switch(id)) {
      node.type = IbNodeType::switch_node;
      node.guid = fabric.switch_guid(id);
      node.port_count = radix;
      node.description = fabric.switch_label(id);
    } else if (n.kind == NodeKind::nic && fabric.nic_present(n.index)) {
      node.type = IbNodeType::ca;
      node.guid = 0x0002c90400000000ULL + static_cast<std::uint64_t>(n.index);
      node.port_count = 1;
      node.description =
          fmt::format("{} mlx5_{}", fabric.host_name(n.host), fabric.rail_of_nic(n.index));
    } else {
      continue;
    }
    node.ports.resize(static_cast<std::size_t>(node.port_count) + 1);
    ib_of[i] = static_cast<int>(out.nodes.size());
    out.nodes.push_back(std::move(node));
  }
  for (const Cable& c : fabric.cables()) {
    const Link& up = fabric.link(c.up);
    const int lo = ib_of[up.src.index()], hi = ib_of[up.dst.index()];
    const std::string ws = width_speed_for(up.bandwidth_Bps * 8 / 1e9);
    const auto x = ws.find('x');
    const int width = std::stoi(ws.substr(0, x));
    const std::string speed = ws.substr(x + 1);
    IbNode& a = out.nodes[static_cast<std::size_t>(lo)];
    IbNode& b = out.nodes[static_cast<std::size_t>(hi)];
    if (c.lower_port > a.port_count || c.upper_port > b.port_count)
      throw core::Error("fabric", fmt::format("{}[{}]", b.description, c.upper_port),
                        fmt::format("port past the switch radix {}", radix));
    a.ports[static_cast<std::size_t>(c.lower_port)] = {hi, c.upper_port, width, speed, 0};
    b.ports[static_cast<std::size_t>(c.upper_port)] = {lo, c.lower_port, width, speed, 0};
  }
  rebuild_links(out);
  return out;
}

std::vector<std::string> apply_faults(IbnetFile& file, const FaultSpec& spec) {
  core::Rng rng(spec.seed);
  std::vector<std::string> log;
  auto port = [&](int node, int p) -> IbPortLink& {
    return file.nodes[static_cast<std::size_t>(node)].ports[static_cast<std::size_t>(p)];
  };
  auto pick = [&](const std::vector<std::size_t>& from) {
    return from[static_cast<std::size_t>(rng.uniform_index(from.size()))];
  };

  for (int k = 0; k < spec.remove_cables; ++k) {
    std::vector<std::size_t> candidates;
    for (std::size_t i = 0; i < file.links.size(); ++i) {
      const IbLink& l = file.links[i];
      if (is_aggregation(file, l.a) || is_aggregation(file, l.b)) continue;
      if ((is_switch(file, l.a) && is_switch(file, l.b)) || spec.include_nic_cables)
        candidates.push_back(i);
    }
    if (candidates.empty())
      throw core::Error("faults.remove_cables", std::to_string(spec.remove_cables),
                        "no cable left to remove");
    const IbLink l = file.links[pick(candidates)];
    port(l.a, l.a_port) = {};
    port(l.b, l.b_port) = {};
    log.push_back(fmt::format("removed: {} - {}", end_name(file, l.a, l.a_port),
                              end_name(file, l.b, l.b_port)));
    rebuild_links(file);
  }
  for (int k = 0; k < spec.downgrade_links; ++k) {
    std::vector<std::size_t> candidates;
    for (std::size_t i = 0; i < file.links.size(); ++i)
      if (!is_aggregation(file, file.links[i].a) && !is_aggregation(file, file.links[i].b))
        candidates.push_back(i);
    if (candidates.empty())
      throw core::Error("faults.downgrade_links", std::to_string(spec.downgrade_links),
                        "no link to downgrade");
    const IbLink l = file.links[pick(candidates)];
    IbPortLink& a = port(l.a, l.a_port);
    IbPortLink& b = port(l.b, l.b_port);
    const std::string before = fmt::format("{}x{}", a.width, a.speed);
    if (a.width > 1) {
      a.width /= 2;
    } else {
      auto it = std::find(std::begin(kSpeedsLowToHigh), std::end(kSpeedsLowToHigh), a.speed);
      if (it != std::begin(kSpeedsLowToHigh) && it != std::end(kSpeedsLowToHigh))
        a.speed = *(it - 1);
    }
    b.width = a.width;
    b.speed = a.speed;
    log.push_back(fmt::format("downgraded: {} - {}: {} -> {}x{}", end_name(file, l.a, l.a_port),
                              end_name(file, l.b, l.b_port), before, a.width, a.speed));
    rebuild_links(file);
  }
  for (int k = 0; k < spec.swap_cable_pairs; ++k) {
    // NIC cables: (adapter node, adapter port, switch node, switch port).
    std::vector<std::size_t> nic_links;
    for (std::size_t i = 0; i < file.links.size(); ++i) {
      const IbLink& l = file.links[i];
      if (is_switch(file, l.a) != is_switch(file, l.b) && !is_aggregation(file, l.a) &&
          !is_aggregation(file, l.b))
        nic_links.push_back(i);
    }
    if (nic_links.size() < 2)
      throw core::Error("faults.swap_cable_pairs", std::to_string(spec.swap_cable_pairs),
                        "fewer than two NIC cables");
    const IbLink x = file.links[pick(nic_links)];
    const int x_sw = is_switch(file, x.a) ? x.a : x.b;
    std::vector<std::size_t> others;
    for (std::size_t i : nic_links) {
      const IbLink& l = file.links[i];
      if ((is_switch(file, l.a) ? l.a : l.b) != x_sw) others.push_back(i);
    }
    if (others.empty())
      throw core::Error("faults.swap_cable_pairs", std::to_string(spec.swap_cable_pairs),
                        "every NIC cable lands on one switch");
    const IbLink y = file.links[pick(others)];
    auto split = [&](const IbLink& l, int& ca, int& ca_port, int& sw, int& sw_port) {
      const bool a_sw = is_switch(file, l.a);
      ca = a_sw ? l.b : l.a;
      ca_port = a_sw ? l.b_port : l.a_port;
      sw = a_sw ? l.a : l.b;
      sw_port = a_sw ? l.a_port : l.b_port;
    };
    int xc, xcp, xs, xsp, yc, ycp, ys, ysp;
    split(x, xc, xcp, xs, xsp);
    split(y, yc, ycp, ys, ysp);
    const IbPortLink xl = port(xc, xcp), yl = port(yc, ycp);
    port(xc, xcp) = {ys, ysp, yl.width, yl.speed, 0};
    port(ys, ysp) = {xc, xcp, yl.width, yl.speed, 0};
    port(yc, ycp) = {xs, xsp, xl.width, xl.speed, 0};
    port(xs, xsp) = {yc, ycp, xl.width, xl.speed, 0};
    log.push_back(fmt::format("swapped: {} now on {}, {} now on {}", end_name(file, xc, xcp),
                              end_name(file, ys, ysp), end_name(file, yc, ycp),
                              end_name(file, xs, xsp)));
    rebuild_links(file);
  }
  return log;
}

}  // namespace twin::topology
