#pragma once
/// Plain specifications of a cluster and its fabric, as a scenario states them.
///
/// Field names match the scenario keys (`cluster.nic_gbps`, `fabric.tiers`, ...) so errors can
/// name them. Defaults describe the reference system: 512 HGX H100 nodes of 8 GPUs, one 400 Gb/s
/// ConnectX-7 NIC per GPU, a rail-optimized non-blocking 3-tier InfiniBand fat tree of 64-port
/// NDR switches (NVIDIA Quantum-2 QM9700). Sources for each default are in the comments.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace twin::topology {

/// How a flow picks among equal-cost up-paths.
enum class RoutingMode {
  dmodk,     ///< deterministic destination-mod-k, as OpenSM's ftree and SimGrid's fat-tree zone
  ecmp,      ///< seeded hash of (src, dst, flow label) per flow
  adaptive,  ///< traffic split evenly over all shortest up-paths
};

std::string_view to_string(RoutingMode mode);
/// Parses "dmodk" / "ecmp" / "adaptive"; throws core::Error naming `field` otherwise.
RoutingMode parse_routing_mode(std::string_view text, std::string_view field = "fabric.routing");
std::vector<std::string> routing_mode_names();

struct ClusterSpec {
  int nodes = 512;
  int gpus_per_node = 8;
  /// Hardware profile name (calibrate/): selects compute and collective figures.
  std::string gpu = "h100-sxm";
  /// Compute NICs per node; GPU g uses NIC floor(g * nics / gpus).
  int nics_per_node = 8;
  /// NIC line rate. ConnectX-7 NDR: 400 Gb/s (datasheets.md).
  double nic_gbps = 400.0;
  /// NVLink bandwidth per GPU per direction. H100 SXM NVLink 4: 450 GB/s (datasheets.md).
  double nvlink_GBps = 450.0;
  /// NVLink/NVSwitch traversal latency, GPU to GPU. Assumption (order of published
  /// NVSwitch port-to-port figures); the calibration profile refines end-to-end latency.
  double nvlink_latency_ns = 300.0;
  /// GPU to NIC path through the node's PCIe switch, per direction. PCIe 5.0 x16:
  /// 32 GT/s x 16 lanes x 128/130 encoding / 8 = 63 GB/s.
  double pcie_GBps = 63.0;
  /// Board power limit of each GPU, W; 0: the profile's reference limit (its measured rates).
  /// Compute rates scale with the sustained SM clock at this limit (the profile's power_clock).
  double gpu_power_w = 0.0;
  double pcie_latency_ns = 200.0;
  /// Slurm node states (`sinfo -N -h -o "%N %T"`): drained and down hosts are left out of
  /// placement and of the campaign's spare pool. Empty: every host is up.
  std::string node_states;

  [[nodiscard]] int gpus() const { return nodes * gpus_per_node; }
  [[nodiscard]] int nics() const { return nodes * nics_per_node; }
  bool operator==(const ClusterSpec&) const = default;
};

struct FabricSpec {
  std::string kind = "fat_tree";
  /// An `ibnetdiscover` dump of a real fabric. When set, the fabric is imported as it is (hosts,
  /// switches, cables, their widths and speeds) and the generator's sizes are ignored.
  std::string file;
  /// The subnet's unicast forwarding tables (`dump_lfts.sh` / `ibroute` output) for `file`'s
  /// fabric: routes then follow them instead of computed up/down tables (topology/lft.hpp).
  std::string lfts;
  /// Switch tiers: 2 (leaf-spine) or 3 (leaf-spine-core).
  int tiers = 3;
  /// Ports per switch. Quantum-2 QM9700: 64 ports of 400 Gb/s (datasheets.md).
  int switch_radix = 64;
  double switch_port_gbps = 400.0;
  /// Ports grouped per transceiver cage on the switch. QM9700: 32 OSFP cages of 2 ports.
  int switch_ports_per_cage = 2;
  /// NIC i of every node cabled to leaf group i (rail i); otherwise a node's NICs share a leaf.
  bool rail_optimized = true;
  /// Leaf down-ports : up-ports. 1.0 is non-blocking; 2.0 halves leaf uplink capacity.
  double oversubscription = 1.0;
  /// Spine down-ports : up-ports (3 tiers only).
  double spine_oversubscription = 1.0;
  /// Ports per leaf kept out of the fabric design (spares, out-of-band, storage).
  int reserved_ports_per_leaf = 0;
  /// Fabric-manager (UFM) hosts: each takes one node slot and `management_ports_per_node`
  /// leaf ports on rails 0..k-1 (DGX SuperPOD: one UFM slot with 4 connections).
  int management_nodes = 0;
  int management_ports_per_node = 4;
  /// Line rate of leaf-spine and spine-core cables; 0 means `switch_port_gbps`.
  double leaf_spine_gbps = 0.0;
  double spine_core_gbps = 0.0;
  /// Propagation delay per cable (about 5 ns per metre of fibre; ~20-30 m runs in a hall).
  double cable_latency_ns = 100.0;
  /// Port-to-port forwarding latency of one switch. Assumption: order of the figures vendors
  /// publish for NDR switches; calibration of small-message latency absorbs the difference.
  double switch_latency_ns = 130.0;
  RoutingMode routing = RoutingMode::dmodk;
  /// Seed of the per-flow ECMP hash.
  std::uint64_t routing_seed = 1;
  bool operator==(const FabricSpec&) const = default;
};

}  // namespace twin::topology
