#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"
#include "fabric_fixtures.hpp"
#include "topology/export.hpp"

namespace twin::topology {
namespace {

/// Non-overlapping occurrences of `needle` in `text`.
long count(const std::string& text, const std::string& needle) {
  long n = 0;
  for (auto at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

Fabric tiny_fabric() {
  ClusterSpec c;
  c.nodes = 2;
  c.gpus_per_node = 2;
  c.nics_per_node = 2;
  FabricSpec f;
  f.tiers = 2;
  f.switch_radix = 8;
  return Fabric(c, f);
}

TEST(Export, JsonListsEveryVertexAndLink) {
  const Fabric fabric = test::small_three_tier();
  std::stringstream out;
  write_json(out, fabric);
  const auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["nodes"].size(), fabric.node_count());
  EXPECT_EQ(j["links"].size(), fabric.link_count());
  EXPECT_EQ(j["geometry"]["cores"], fabric.geometry().cores);
  const auto& l0 = j["links"][0];
  EXPECT_EQ(l0["src"], fabric.link(LinkId(0)).src.value());
  EXPECT_DOUBLE_EQ(l0["bandwidth_Bps"].get<double>(), 50e9);
}

TEST(Export, DotDrawsEachCableOnceAndRefusesLargeFabrics) {
  const Fabric fabric = tiny_fabric();
  std::stringstream out;
  write_dot(out, fabric);
  const std::string dot = out.str();
  const long edges = count(dot, "->");
  // 4 NIC cables + leaf-spine cables + one NVLink and one PCIe edge per GPU.
  const auto expected = static_cast<long>(fabric.cable_count()) + 2 * fabric.gpu_count();
  EXPECT_EQ(edges, expected);
  EXPECT_NE(dot.find("leaf[0]"), std::string::npos);
  std::stringstream big;
  EXPECT_THROW(write_dot(big, test::reference_fabric()), core::Error);
}

TEST(Export, SimgridPlatformCarriesOurRoutes) {
  const Fabric fabric = tiny_fabric();
  const Router router(fabric);
  std::stringstream out;
  write_simgrid_platform(out, fabric, router);
  const std::string xml = out.str();
  EXPECT_NE(xml.find("<platform version=\"4.1\">"), std::string::npos);
  // 4 GPUs: 12 ordered pairs, each with a route.
  EXPECT_EQ(count(xml, "<route "), 12);
  // The route of GPU 0 -> GPU 2 lists exactly our links, in order.
  const Route r = router.gpu_route(0, 2);
  std::string expected = "<route src=\"gpu0\" dst=\"gpu2\" symmetrical=\"NO\">";
  for (const Hop& hop : r.hops)
    expected += "<link_ctn id=\"l" + std::to_string(hop.link.value()) + "\"/>";
  EXPECT_NE(xml.find(expected), std::string::npos);

  std::stringstream refused;
  EXPECT_THROW(
      write_simgrid_platform(refused, fabric, Router(fabric, nullptr, RoutingMode::adaptive)),
      core::Error);
  const Fabric big = test::reference_fabric();
  EXPECT_THROW(write_simgrid_platform(refused, big, Router(big)), core::Error);
  // Explicit pairs work at any size.
  std::stringstream some;
  write_simgrid_platform(some, big, Router(big), {{0, 4095}});
  EXPECT_NE(some.str().find("dst=\"gpu4095\""), std::string::npos);
}

}  // namespace
}  // namespace twin::topology
