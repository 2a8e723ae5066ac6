#include "topology/export.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

// GCC 12 reports -Wmaybe-uninitialized inside Boost's filtered_graph edge iterators (a known
// false positive of its optional<> storage); silence it for these headers only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/graph/filtered_graph.hpp>
#include <boost/graph/graphviz.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "topology/bom.hpp"

namespace twin::topology {

void write_json(std::ostream& out, const Fabric& fabric) {
  const FatTreeGeometry& g = fabric.geometry();
  nlohmann::ordered_json j;
  j["format"] = "clustertwin-fabric";
  j["version"] = 1;
  j["geometry"] = {{"tiers", g.tiers},
                   {"radix", g.radix},
                   {"rails", g.rails},
                   {"leaf_down_ports", g.leaf_down},
                   {"leaf_up_ports", g.leaf_up},
                   {"leaves", g.leaves},
                   {"pods", g.pods},
                   {"spines", g.spines},
                   {"spine_up_ports", g.spine_up},
                   {"cores", g.cores}};
  auto& nodes = j["nodes"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < fabric.node_count(); ++i) {
    const NodeId id = NodeId::from_index(i);
    const Node& n = fabric.node(id);
    nodes.push_back({{"id", i},
                     {"kind", to_string(n.kind)},
                     {"name", fabric.node_name(id)},
                     {"group", n.host}});
  }
  auto& links = j["links"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < fabric.link_count(); ++i) {
    const Link& l = fabric.link(LinkId::from_index(i));
    links.push_back({{"id", i},
                     {"src", l.src.value()},
                     {"dst", l.dst.value()},
                     {"kind", to_string(l.kind)},
                     {"bandwidth_Bps", l.bandwidth_Bps},
                     {"latency_s", l.latency_s},
                     {"cable", l.cable.valid() ? nlohmann::ordered_json(l.cable.value())
                                               : nlohmann::ordered_json(nullptr)}});
  }
  out << j.dump(1) << '\n';
}

void write_dot(std::ostream& out, const Fabric& fabric) {
  if (fabric.node_count() > kDotMaxVertices)
    throw core::Error("format", "dot",
                      fmt::format("DOT export is for small fabrics: this one has {} vertices "
                                  "(limit {}); use --format json",
                                  fabric.node_count(), kDotMaxVertices));
  // Draw cables once (the upward link) and in-server links once (the GPU-side one).
  using Graph = Fabric::Graph;
  const Graph& graph = fabric.graph();
  auto vertex_writer = [&](std::ostream& os, Graph::vertex_descriptor v) {
    const NodeId id = NodeId::from_index(v);
    const char* shape = fabric.is_switch(id) ? "box" : "ellipse";
    os << fmt::format("[label=\"{}\", shape={}, rank={}]", fabric.node_name(id), shape,
                      to_string(fabric.node(id).kind));
  };
  auto edge_writer = [&](std::ostream& os, Graph::edge_descriptor e) {
    const Link& l = fabric.link(graph[e]);
    os << fmt::format("[label=\"{:g} GB/s\"]", l.bandwidth_Bps / 1e9);
  };
  struct UpwardOnly {
    const Fabric* fabric = nullptr;
    const Graph* graph = nullptr;
    bool operator()(Graph::edge_descriptor e) const {
      const LinkId id = (*graph)[e];
      const Link& l = fabric->link(id);
      if (l.cable.valid()) return fabric->cable(l.cable).up == id;
      return fabric->node(l.src).kind == NodeKind::gpu;
    }
  };
  boost::filtered_graph<Graph, UpwardOnly> upward(graph, UpwardOnly{&fabric, &graph});
  boost::write_graphviz(out, upward, vertex_writer, edge_writer);
}

void write_simgrid_platform(std::ostream& out, const Fabric& fabric, const Router& router,
                            const std::vector<std::pair<int, int>>& pairs) {
  if (router.mode() == RoutingMode::adaptive)
    throw core::Error("fabric.routing", "adaptive",
                      "a SimGrid route is one path; adaptive routing splits flows over many: "
                      "export with dmodk or ecmp");
  std::vector<std::pair<int, int>> all;
  const std::vector<std::pair<int, int>>* wanted = &pairs;
  if (pairs.empty()) {
    if (fabric.gpu_count() > kSimgridAllPairsMaxGpus)
      throw core::Error("format", "simgrid",
                        fmt::format("a Full-routing platform lists a route per GPU pair; {} GPUs "
                                    "is over the limit of {} for an all-pairs export",
                                    fabric.gpu_count(), kSimgridAllPairsMaxGpus));
    for (int a = 0; a < fabric.gpu_count(); ++a)
      for (int b = 0; b < fabric.gpu_count(); ++b)
        if (a != b) all.emplace_back(a, b);
    wanted = &all;
  }

  fmt::print(out, "<?xml version='1.0'?>\n");
  fmt::print(out, "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n");
  fmt::print(out, "<platform version=\"4.1\">\n");
  fmt::print(out, "  <zone id=\"fabric\" routing=\"Full\">\n");
  for (int gpu = 0; gpu < fabric.gpu_count(); ++gpu)
    fmt::print(out, "    <host id=\"gpu{}\" speed=\"1Gf\"/>\n", gpu);
  for (std::size_t i = 0; i < fabric.link_count(); ++i) {
    const Link& l = fabric.link(LinkId::from_index(i));
    fmt::print(out, "    <link id=\"l{}\" bandwidth=\"{}Bps\" latency=\"{}s\"/>\n", i,
               l.bandwidth_Bps, l.latency_s);
  }
  for (auto [a, b] : *wanted) {
    const Route route = router.gpu_route(a, b);
    fmt::print(out, "    <route src=\"gpu{}\" dst=\"gpu{}\" symmetrical=\"NO\">", a, b);
    for (const Hop& hop : route.hops) fmt::print(out, "<link_ctn id=\"l{}\"/>", hop.link.value());
    fmt::print(out, "</route>\n");
  }
  fmt::print(out, "  </zone>\n</platform>\n");
}

}  // namespace twin::topology
