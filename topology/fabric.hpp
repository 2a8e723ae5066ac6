#pragma once
/// The fabric: every GPU, NIC, NVSwitch domain and InfiniBand switch of a cluster as vertices of
/// a Boost.Graph, every direction of every cable, NVLink and PCIe path as a directed edge.
///
/// Ids are dense and laid out by kind so lookups are arithmetic: GPUs first (NodeId g = GPU g),
/// then NICs, NVSwitch domains, leaves, spines, cores. Cables are numbered tier by tier (NIC-leaf,
/// leaf-spine, spine-core); cable c owns links 2c (upward, toward the higher tier) and 2c + 1
/// (downward). NVLink and PCIe links follow the cable links.
///
/// Modelling choices:
/// - An NVSwitch domain (4 NVSwitch chips in an HGX H100) is one vertex: the chips together are
///   non-blocking, so only each GPU's own NVLink bandwidth (450 GB/s per direction) constrains.
/// - The GPU-to-NIC path through the node's PCIe switch is one link per direction per GPU.
/// - Every link's latency is its propagation delay plus, when it enters a switch, that switch's
///   forwarding latency; a path's latency is the sum over its links.
/// - Fabric-manager hosts take leaf ports (counted in the bill of materials) but carry no
///   training traffic, so they are not vertices.
/// A failure or degradation is a FabricState overlay, never a rebuilt Fabric.
///
/// A fabric is generated (fat-tree geometry from the specs) or explicit: built from a FabricPlan,
/// e.g. an `ibnetdiscover` dump named by `fabric.file`. Explicit fabrics keep the same vertex
/// layout (hosts x GPUs, hosts x rails NICs, NVSwitch domains, then tier-1, 2 and 3 switches) but
/// their cables come from the plan: a NIC slot may have no cable (absent adapter), switch ports
/// and parallel cables are as found, and routing uses up/down tables (topology/updown.hpp)
/// instead of the geometry's arithmetic. Every cable records the switch port at each end.
/// Host states from the scheduler (`cluster.node_states`, Slurm `sinfo`) mark hosts drained or
/// down: they stay in the graph but placement leaves them out.

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/ids.hpp"
#include "topology/fabric_plan.hpp"
#include "topology/fat_tree.hpp"
#include "topology/spec.hpp"

namespace twin::topology {

using core::CableId;
using core::LinkId;
using core::NodeId;

enum class NodeKind { gpu, nic, nvswitch, leaf, spine, core };
enum class LinkKind { nvlink, pcie, nic_leaf, leaf_spine, spine_core };

std::string_view to_string(NodeKind kind);
std::string_view to_string(LinkKind kind);
/// The fabric tier of a cable kind: 0 NIC-leaf, 1 leaf-spine, 2 spine-core; -1 inside a node.
int cable_tier(LinkKind kind);

struct Node {
  NodeKind kind;
  int index;  ///< index among nodes of its kind (GPU 17, leaf 3, ...)
  int host;   ///< cluster node (server) for GPUs, NICs and NVSwitches; pod for leaves and spines;
              ///< plane for cores
};

struct Link {
  NodeId src;
  NodeId dst;
  LinkKind kind;
  double bandwidth_Bps;
  double latency_s;
  CableId cable;  ///< invalid for NVLink and PCIe
};

struct Cable {
  LinkId up;    ///< toward the higher tier
  LinkId down;  ///< toward the lower tier
  LinkKind kind;
  int lower_port = 0;  ///< port number at the lower end (1 on a NIC)
  int upper_port = 0;  ///< port number on the upper switch
};

/// What the scheduler says about a host (Slurm `sinfo -N -o "%N %T"`).
enum class HostState : std::uint8_t { up, drained, down };
std::string_view to_string(HostState state);

class ForwardingTables;

class Fabric {
 public:
  /// Builds the fabric; throws core::Error (naming the field) if the spec is impossible.
  /// With `fabric.file` set, reads that ibnetdiscover dump instead of generating; with
  /// `cluster.node_states` set, reads the host states.
  Fabric(ClusterSpec cluster, FabricSpec fabric);
  /// An explicit fabric; `cluster` gives the per-host GPUs, NVLink and PCIe figures, the plan
  /// the hosts, rails, switches and cables (it overrides nodes, nics_per_node, tiers, radix).
  Fabric(ClusterSpec cluster, FabricSpec fabric, const FabricPlan& plan);

  /// True when built from a plan (routing uses up/down tables, not the geometry).
  [[nodiscard]] bool is_explicit() const { return explicit_; }
  /// Host name ("node0007" for generated fabrics, the real name for imported ones).
  [[nodiscard]] const std::string& host_name(int host) const { return host_names_[host]; }
  /// Switch name as the file gave it ("A09-P1-IBLEAF-04-04"), or node_name() when generated.
  [[nodiscard]] std::string switch_label(NodeId id) const;
  [[nodiscard]] std::uint64_t switch_guid(NodeId id) const;
  /// Rail served by a leaf (-1 when unknown).
  [[nodiscard]] int rail_of_leaf(int leaf) const { return leaf_rail_[leaf]; }
  [[nodiscard]] bool nic_present(int n) const { return nic_cable_[n].valid(); }
  [[nodiscard]] HostState host_state(int host) const { return host_state_[host]; }
  /// A job may use the host: every NIC cabled and the scheduler has it up.
  [[nodiscard]] bool host_usable(int host) const;
  [[nodiscard]] int usable_host_count() const;
  /// Marks hosts from a Slurm node-state file; see topology/node_states.hpp.
  void apply_host_states(const std::vector<std::pair<int, HostState>>& states);
  /// The subnet's forwarding tables (`fabric.lfts`), or null: routes use up/down tables.
  [[nodiscard]] const ForwardingTables* forwarding_tables() const { return lfts_.get(); }
  /// The plan an explicit fabric was built from (empty for generated ones).
  [[nodiscard]] const FabricPlan& plan() const { return plan_; }

  [[nodiscard]] const ClusterSpec& cluster() const { return cluster_; }
  [[nodiscard]] const FabricSpec& spec() const { return spec_; }
  [[nodiscard]] const FatTreeGeometry& geometry() const { return geo_; }

  [[nodiscard]] std::size_t node_count() const { return nodes_.size(); }
  [[nodiscard]] std::size_t link_count() const { return links_.size(); }
  [[nodiscard]] std::size_t cable_count() const { return cables_.size(); }
  [[nodiscard]] const Node& node(NodeId id) const { return nodes_[id.index()]; }
  [[nodiscard]] const Link& link(LinkId id) const { return links_[id.index()]; }
  [[nodiscard]] const Cable& cable(CableId id) const { return cables_[id.index()]; }
  [[nodiscard]] const std::vector<Node>& nodes() const { return nodes_; }
  [[nodiscard]] const std::vector<Link>& links() const { return links_; }
  [[nodiscard]] const std::vector<Cable>& cables() const { return cables_; }
  /// Human-readable vertex name: "gpu[12.3]" (node 12, local GPU 3), "leaf[7]", "core[63]".
  [[nodiscard]] std::string node_name(NodeId id) const;
  [[nodiscard]] bool is_switch(NodeId id) const;

  // Vertex lookups.
  [[nodiscard]] int gpu_count() const { return cluster_.gpus(); }
  [[nodiscard]] int nic_count() const { return cluster_.nics(); }
  [[nodiscard]] NodeId gpu(int g) const { return NodeId::from_index(g); }
  [[nodiscard]] NodeId nic(int n) const { return NodeId::from_index(first_nic_ + n); }
  [[nodiscard]] NodeId nvswitch(int host) const {
    return NodeId::from_index(first_nvswitch_ + host);
  }
  [[nodiscard]] NodeId leaf(int l) const { return NodeId::from_index(first_leaf_ + l); }
  [[nodiscard]] NodeId spine(int s) const { return NodeId::from_index(first_spine_ + s); }
  [[nodiscard]] NodeId core_switch(int c) const { return NodeId::from_index(first_core_ + c); }
  /// Server (cluster node) of a GPU, and the NIC (global index) it sends through: with more
  /// NICs than GPUs per node (a whole number per GPU, e.g. 16 x 100 Gb/s for 8 GPUs) the GPU's
  /// `j`-th of nics_per_gpu(), on rail local x nics_per_gpu() + j; with fewer, the NIC it shares.
  [[nodiscard]] int host_of_gpu(int g) const { return g / cluster_.gpus_per_node; }
  [[nodiscard]] int nic_of_gpu(int g, int j = 0) const;
  [[nodiscard]] int nics_per_gpu() const {
    return std::max(1, cluster_.nics_per_node / cluster_.gpus_per_node);
  }
  [[nodiscard]] int rail_of_nic(int n) const { return n % cluster_.nics_per_node; }
  [[nodiscard]] int host_of_nic(int n) const { return n / cluster_.nics_per_node; }
  [[nodiscard]] int leaf_of_nic(int n) const { return nic_leaf_[n]; }  ///< -1 if absent
  /// D-mod-k destination index of a NIC (leaf * leaf down-ports + port).
  [[nodiscard]] int endpoint_index(int n) const { return nic_endpoint_[n]; }

  // Cable and link lookups used by routing (all arithmetic, O(1)).
  /// The NIC's cable (invalid when the adapter is absent from an explicit fabric).
  [[nodiscard]] CableId nic_cable(int n) const { return nic_cable_[n]; }
  [[nodiscard]] CableId leaf_up_cable(int leaf, int port) const;
  [[nodiscard]] CableId spine_up_cable(int spine, int port) const;
  [[nodiscard]] LinkId nvlink_up(int g) const { return LinkId::from_index(first_nvlink_ + 2 * g); }
  [[nodiscard]] LinkId nvlink_down(int g) const {
    return LinkId::from_index(first_nvlink_ + 2 * g + 1);
  }
  [[nodiscard]] LinkId pcie_up(int g) const { return LinkId::from_index(first_pcie_ + 2 * g); }
  [[nodiscard]] LinkId pcie_down(int g) const {
    return LinkId::from_index(first_pcie_ + 2 * g + 1);
  }

  /// The Boost.Graph view: vertex i is NodeId i, each edge's property is its LinkId.
  using Graph =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, LinkId>;
  [[nodiscard]] const Graph& graph() const { return graph_; }

 private:
  NodeId add_node(NodeKind kind, int index, int host);
  LinkId add_link(NodeId src, NodeId dst, LinkKind kind, double bandwidth_Bps, double latency_s,
                  CableId cable);
  void add_cable(NodeId lower, NodeId upper, LinkKind kind, double bandwidth_Bps,
                 int lower_port = 0, int upper_port = 0);
  void build();
  void build_explicit(const FabricPlan& plan);
  void add_vertices(int leaves, int spines, int cores, const std::vector<int>& switch_group);
  void add_host_links();
  void finish_graph();
  void load_host_states();

  ClusterSpec cluster_;
  FabricSpec spec_;
  FatTreeGeometry geo_;
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<Cable> cables_;
  std::vector<int> nic_leaf_;
  std::vector<int> nic_endpoint_;
  std::vector<CableId> nic_cable_;
  std::vector<int> leaf_rail_;
  std::vector<std::string> host_names_;
  std::vector<HostState> host_state_;
  std::vector<int> next_port_;  ///< per switch vertex: next free port (generated fabrics)
  FabricPlan plan_;
  std::shared_ptr<const ForwardingTables> lfts_;
  bool explicit_ = false;
  Graph graph_;
  int first_nic_ = 0, first_nvswitch_ = 0, first_leaf_ = 0, first_spine_ = 0, first_core_ = 0;
  int first_leaf_cable_ = 0, first_spine_cable_ = 0;
  int first_nvlink_ = 0, first_pcie_ = 0;
};

}  // namespace twin::topology
