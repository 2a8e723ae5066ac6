// Routes that follow a subnet's own forwarding tables (dump_lfts.sh / ibroute output) on a
// hand-made 2-leaf, 2-spine fabric (tests/data/lft/README.md), and the errors of bad tables.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "topology/fabric.hpp"
#include "topology/lft.hpp"
#include "topology/routing.hpp"

namespace {

using namespace twin::topology;

const std::string kDir = std::string(CLUSTERTWIN_SOURCE_DIR) + "/tests/data/lft/";

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Fabric tiny(const std::string& lfts = {}) {
  ClusterSpec cluster;
  FabricSpec spec;
  spec.file = kDir + "tiny.topo";
  spec.lfts = lfts;
  return Fabric(cluster, spec);
}

/// The switches a route crosses, by name, from the NIC cable's leaf on.
std::string path_of(const Fabric& f, const Route& r) {
  std::string out;
  for (const Hop& h : r.hops) {
    const NodeId to = f.link(h.link).dst;
    out += (out.empty() ? "" : " ") + (f.is_switch(to) ? f.switch_label(to) : std::string("nic"));
  }
  return out;
}

/// The error text of parsing `text` as tables of the tiny fabric.
std::string error_of(const std::string& text) {
  const Fabric f = tiny();
  try {
    ForwardingTables t(text, "bad.lfts", f);
  } catch (const twin::core::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ForwardingTables, RoutesFollowTheTablesNotUpDown) {
  const Fabric updown = tiny();
  const Fabric tables = tiny(kDir + "tiny.lfts");
  ASSERT_NE(tables.forwarding_tables(), nullptr);
  EXPECT_EQ(tables.forwarding_tables()->switches_with_tables(), 4);
  const int host1 = 0, host2 = 1;  // one adapter each: NIC index = host
  ASSERT_EQ(tables.host_name(host1), "host1");
  // D-mod-k over the leaf's up-ports in port order: destination index mod 2.
  EXPECT_EQ(path_of(updown, Router(updown).nic_route(host1, host2)), "leaf-a spine-2 leaf-b nic");
  EXPECT_EQ(path_of(updown, Router(updown).nic_route(host2, host1)), "leaf-b spine-1 leaf-a nic");
  // The tables send host1 -> host2 by leaf-a port 3 and host2 -> host1 by leaf-b port 4.
  for (auto mode : {RoutingMode::dmodk, RoutingMode::ecmp, RoutingMode::adaptive}) {
    const Router r(tables, nullptr, mode);
    const Route there = r.nic_route(host1, host2), back = r.nic_route(host2, host1);
    EXPECT_EQ(path_of(tables, there), "leaf-a spine-1 leaf-b nic");
    EXPECT_EQ(path_of(tables, back), "leaf-b spine-2 leaf-a nic");
    EXPECT_EQ(there.fabric_hops, 4);
    // Four cables at one link latency each, as on the up/down route of the same length.
    EXPECT_DOUBLE_EQ(there.latency_s, Router(updown).nic_route(host1, host2).latency_s);
  }
}

TEST(ForwardingTables, ABrokenTableFailsWhenRoutedNamingTheSwitch) {
  std::string text = slurp(kDir + "tiny.lfts");
  // spine-1 sends host2 back down to leaf-a, whose table sends it up to spine-1 again.
  const auto spine1 = text.find("(spine-1)");
  const auto entry = text.find("0x0006 002", spine1);
  ASSERT_NE(entry, std::string::npos);
  text.replace(entry, 10, "0x0006 001");
  const Fabric f = tiny();
  const auto tables = std::make_shared<ForwardingTables>(text, "loop.lfts", f);
  Route route;
  try {
    tables->route_to(route, f, nullptr, 0, 0, 1);
    FAIL() << "a forwarding loop was routed";
  } catch (const twin::core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("forwarding loop"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("loop.lfts"), std::string::npos) << e.what();
  }
  // No entry for a destination.
  text = slurp(kDir + "tiny.lfts");
  text.erase(text.find("0x0006 003"),
             text.find('\n', text.find("0x0006 003")) - text.find("0x0006 003") + 1);
  const ForwardingTables missing(text, "missing.lfts", f);
  Route r2;
  try {
    missing.route_to(r2, f, nullptr, 0, 0, 1);
    FAIL() << "a route without an entry was routed";
  } catch (const twin::core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("leaf-a has no entry"), std::string::npos) << e.what();
  }
}

TEST(ForwardingTables, BadInputNamesTheLine) {
  const std::string good = slurp(kDir + "tiny.lfts");
  auto with_line = [&](int line, const std::string& text) {
    std::istringstream in(good);
    std::string out, l;
    for (int n = 1; std::getline(in, l); ++n) out += (n == line ? text : l) + "\n";
    return out;
  };
  const std::string garbage = error_of(with_line(5, "0x0002 three : (Switch)"));
  EXPECT_NE(garbage.find("line 5"), std::string::npos) << garbage;
  const std::string past = error_of(
      with_line(6, "0x0005 009 : (Channel Adapter portguid 0x0000000000000050: 'host1 mlx5_0')"));
  EXPECT_NE(past.find("line 6: port 9 is past leaf-a's 4 ports"), std::string::npos) << past;
  const std::string stranger = error_of(
      with_line(6, "0x0005 001 : (Channel Adapter portguid 0x00000000000000ff: 'stranger')"));
  EXPECT_NE(stranger.find("line 6: adapter portguid 0x00000000000000ff"), std::string::npos)
      << stranger;
  const std::string unknown_switch =
      error_of(with_line(9, "Unicast lids [0x0-0x6] of switch Lid 9 guid 0x0000000000000099 (x):"));
  EXPECT_NE(unknown_switch.find("line 9: switch guid 0x0000000000000099"), std::string::npos)
      << unknown_switch;
  const std::string twice = error_of(
      with_line(5, "0x0005 001 : (Channel Adapter portguid 0x0000000000000050: 'host1 mlx5_0')"));
  EXPECT_NE(twice.find("line 6: leaf-a has two entries"), std::string::npos) << twice;
  const std::string bare = error_of(with_line(6, "0x0005 001"));
  EXPECT_NE(bare.find("line 6: an entry without its destination info"), std::string::npos) << bare;
  const std::string orphan = error_of("0x0005 001 : (Channel Adapter portguid 0x50: 'h')\n");
  EXPECT_NE(orphan.find("line 1: a table entry before any"), std::string::npos) << orphan;
  EXPECT_NE(error_of("").find("no switch tables"), std::string::npos);
  // A generated fabric has no real switches to program.
  ClusterSpec cluster;
  cluster.nodes = 2;
  FabricSpec spec;
  spec.tiers = 2;
  spec.switch_radix = 8;
  spec.lfts = kDir + "tiny.lfts";
  EXPECT_THROW(Fabric(cluster, spec), twin::core::Error);
}

TEST(ForwardingTables, TablesWrittenFromUpDownRouteTheRealDumpTheSameWay) {
  // The tables our D-mod-k up/down routing would program on the real NDR fabric, written as
  // dump_lfts.sh prints them and read back: every route is the same, link for link.
  ClusterSpec cluster;
  FabricSpec spec;
  spec.file = std::string(CLUSTERTWIN_TEST_DATA) + "/ibnetdiscover/nvidia-topograph-example.out";
  const Fabric updown(cluster, spec);
  const Router computed(updown, nullptr, RoutingMode::dmodk);
  std::ostringstream text;
  write_lfts(text, updown, computed);
  const auto path = std::filesystem::temp_directory_path() / "clustertwin-lft-test.lfts";
  std::ofstream(path) << text.str();
  spec.lfts = path.string();
  const auto start = std::chrono::steady_clock::now();
  const Fabric tables(cluster, spec);
  const double read_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::filesystem::remove(path);
  ASSERT_NE(tables.forwarding_tables(), nullptr);
  EXPECT_EQ(tables.forwarding_tables()->switches_with_tables(), 40);
  std::printf("real NDR dump: %zu bytes of tables, import + tables %.3f s\n", text.str().size(),
              read_s);
  const Router followed(tables, nullptr, RoutingMode::ecmp);  // the mode no longer matters
  int compared = 0;
  for (int src = 0; src < updown.nic_count(); src += 7)
    for (int dst = 0; dst < updown.nic_count(); dst += 5) {
      if (!updown.nic_present(src) || !updown.nic_present(dst) || src == dst) continue;
      const Route a = computed.nic_route(src, dst), b = followed.nic_route(src, dst);
      ASSERT_EQ(a.hops.size(), b.hops.size()) << src << " -> " << dst;
      for (std::size_t h = 0; h < a.hops.size(); ++h)
        ASSERT_EQ(a.hops[h].link, b.hops[h].link) << src << " -> " << dst;
      EXPECT_DOUBLE_EQ(a.latency_s, b.latency_s);
      ++compared;
    }
  EXPECT_GT(compared, 8000);  // every 7th source x every 5th destination, cabled
}

}  // namespace
