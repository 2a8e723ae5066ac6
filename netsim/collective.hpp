#pragma once
/// Collective algorithms as plans of flows, and their simulation on the fabric.
///
/// A plan is a pure function of (op, algorithm, groups, bytes, fabric): phases of concurrent
/// transfers, each phase tagged with the profile curve that calibrates it. No engine is
/// involved in planning, so plans are testable on their own.
///
/// Conventions follow nccl-tests: `bytes` is the per-rank buffer size nccl-tests reports
/// (all-gather: the gathered output; reduce-scatter: the input), and
///   busbw = algbw * factor, algbw = bytes / time,
///   factor = 2(n-1)/n (all-reduce), (n-1)/n (all-gather, reduce-scatter, all-to-all), 1 else.
///
/// Time of a collective with algorithm a and protocol p, per phase:
///   t = L(a, p, scale) + T_flow(phase) / (efficiency(curve) x protocol fraction(a, p))
/// where T_flow is the makespan of the phase's flows under max-min sharing on the fabric (in
/// the given state), started together, without latency; L and the protocol fraction are
/// NCCL's cost model (netsim/nccl_model.hpp); the curve's efficiency is the path's measured
/// fraction (NVLink protocol overhead, NIC payload, pipeline losses). A curve fitted at one
/// scale also carries its measured latency, moved to this scale by the model's steps x hops.
/// "auto" takes what NCCL itself runs: where the profile carries NCCL's tuner figures and NCCL
/// tunes the op, the (algorithm, protocol) of minimum time in NCCL's own table
/// (netsim/nccl_tuner.hpp), which can differ from the one the simulation finds fastest (the
/// result then names that one too); elsewhere (all-to-all, send/recv, a profile without tuner
/// figures) the minimum predicted time among those the profile calibrates. Ring and tree cells
/// are also held to NCCL's per-channel ceilings (LL128 and tree) at the graph's channel count.
/// A pipelined algorithm (ring, tree, NVLS) is one phase in its steady state — every link of
/// the pipeline busy at once — not 2(n-1) steps. Every group given is planned into the same
/// phases, so concurrent instances (e.g. all data-parallel groups at once) share links.
///
/// Algorithms:
///  ring      G rail-aligned channels when groups span whole nodes (channel c enters node i on
///            rail (c+i) mod G and leaves on rail (c+i+1) mod G, so every inter-node hop stays
///            on one rail and every NIC carries one channel each way); else one ring in group
///            order. Each ring edge carries factor * bytes / channels.
///  tree      all-reduce: two complementary binary trees over nodes (NCCL's double binary
///            tree), each carrying half the data up (reduce) and down (broadcast) at once,
///            one channel per rail; inside nodes a chain per channel.
///  nvls      all-reduce inside one node through NVSwitch multicast/reduction: each GPU moves
///            bytes * (n+1)/n up to and down from the switch.
///  nvls_tree all-reduce across nodes without in-network reduction (NCCL's NVLSTree): NVLS in
///            each node, and GPU g, holding the node's reduced share 1/G, runs the double binary
///            tree of `tree` across nodes on rail g with that share: on 2 nodes each NIC carries
///            S/G each way, half a ring's traffic (why busbw can pass the NIC bound there).
///  pat       all-gather / reduce-scatter with one GPU per node (NCCL 2.23+): the same bytes
///            per rank as a ring, in log2(n) steps instead of n-1.
///  sharp     all-reduce across nodes with reduction in the IB switches: NVLS-like inside the
///            node, and each GPU sends its 1/G share up to its leaf and receives the result:
///            half the NIC traffic of a ring.
///  hierarchical  reduce-scatter inside each node, all-reduce per rail across nodes (ring on
///            bytes/G), all-gather inside each node: three phases one after another.
///  pairwise  all-to-all: every rank sends bytes/n to every other, each through its own NIC
///            (NCCL with PXN disabled: GPU i's chunk for GPU j of another node leaves through
///            i's NIC and enters through j's, crossing the spines when their rails differ).
///  pxn       all-to-all rail-aligned (NCCL's PXN, its default for all-to-all: NCCL_PXN_DISABLE=0
///            and NCCL_P2P_PXN_LEVEL=2 since 2.12). GPU i of node A sends its chunk for GPU j of
///            node B (rail r = j's rail) over NVLink to A's GPU on rail r (directly when i = r),
///            which sends it from NIC (A, r) to NIC (B, r) — so every byte leaves and enters on
///            the destination's rail and never crosses rails in the fabric. The proxy GPU sends
///            for all local GPUs on one shared connection (NCCL_NET_SHARED_COMMS=1, the default),
///            which the fabric routes (and an ECMP fabric hashes) as one flow per NIC pair.
///            Planned aggregated, as exactly equivalent weighted flows (netsim/flow.hpp):
///              NVLink  g -> h of node A: 1 + (m-1) members (g's chunk for h, and its chunks
///                      for rail h of the m-1 other nodes), weight m, m * bytes/n;
///              network NIC (A, r) -> NIC (B, r): one member per GPU of A, weight G,
///                      G * bytes/n.
///            That is n*G*(m-1) + n*(G-1) flows instead of n*(n-1) (n ranks, m nodes, G GPUs
///            per node): 2.1 million instead of 16.8 million at 4,096 GPUs. The members of one
///            aggregate share every link, so flows on different NIC pairs (other rails, or other
///            node pairs) stay separate and keep their own ECMP hash or D-mod-k path.
///  direct    send/recv: rank i sends bytes to rank i+1 (nccl-tests sendrecv).
///  ring (broadcast) pipelined chain from the root: every edge carries bytes.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/profile.hpp"
#include "netsim/engine.hpp"
#include "netsim/nccl_model.hpp"
#include "netsim/nccl_tuner.hpp"
#include "netsim/vocabulary.hpp"
#include "topology/fabric.hpp"
#include "topology/fabric_state.hpp"
#include "topology/routing.hpp"

namespace twin::netsim {

/// What to run: an algorithm and a protocol, each fixed or left to the tuner ("auto").
struct Choice {
  std::optional<Algorithm> algorithm;
  std::optional<Protocol> protocol;
};
/// "auto", "ring", "ring/ll128", "auto/simple"; errors name `field`.
Choice parse_choice(std::string_view text, const std::string& field = "algorithm");
std::string to_text(const Choice& choice);

/// A transfer between GPUs, or between a GPU and its NVSwitch (`to_switch`/`from_switch`) or
/// its leaf switch (`to_leaf`/`from_leaf`) for in-switch reduction.
/// `members` > 1: the transfer aggregates that many member transfers on the same route (bytes
/// is their sum), run as one flow of that weight.
struct Transfer {
  enum class Kind : std::uint8_t { gpu_to_gpu, to_switch, from_switch, to_leaf, from_leaf };
  Kind kind = Kind::gpu_to_gpu;
  int src_gpu = -1;
  int dst_gpu = -1;
  std::uint32_t members = 1;
  double bytes = 0;
};

struct Phase {
  CollectiveOp op =
      CollectiveOp::all_reduce;           ///< what this phase performs (hierarchical: rs/ar/ag)
  Algorithm algorithm = Algorithm::ring;  ///< the profile curve and latency cells it uses
  Scope scope = Scope::intra_node;
  GroupScale scale;  ///< ranks and nodes of one group of this phase
  std::vector<Transfer> transfers;
  /// Hash of the transfers with bytes relative to the collective's size (set by
  /// plan_collective; identical phases are solved once).
  std::uint64_t signature = 0;
};

struct Plan {
  CollectiveOp op = CollectiveOp::all_reduce;
  Algorithm algorithm = Algorithm::ring;
  int ranks = 0;  ///< per group
  int nodes = 0;  ///< servers spanned by a group
  double bytes = 0;
  std::vector<Phase> phases;
};

/// Throws unless a collective's size in bytes is positive (the error names "size").
void check_collective_size(double bytes);
/// The key under which identical phases share one solve: a hash of the transfers, with bytes
/// relative to the collective's size `bytes` (never 0).
std::uint64_t phase_signature(const Phase& phase, double bytes);

/// Plans `op` with `algorithm` for every group at once. Groups are lists of GPU indices (all
/// the same size); errors (a group too small, a GPU out of range, an algorithm that does not
/// implement the op or fit the groups) name the field.
Plan plan_collective(const topology::Fabric& fabric, CollectiveOp op, Algorithm algorithm,
                     const std::vector<std::vector<int>>& groups, double bytes);

struct CollectiveResult {
  CollectiveOp op = CollectiveOp::all_reduce;
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  double bytes = 0;
  int ranks = 0;
  double time_s = 0;
  double latency_s = 0;
  std::vector<double> phase_flow_s;  ///< link-limited makespan of each phase
  double algbw_GBps = 0, busbw_GBps = 0;
  std::size_t flows = 0;
  /// Every curve used was fitted at this scale (nodes x GPUs per node) on a size range that
  /// contains this size.
  bool measured_here = false;
  /// Bytes each link carried during this collective (indexed by LinkId), all groups together.
  std::vector<double> link_bytes;
  /// Chosen by NCCL's tuner, and the simulation finds another (algorithm, protocol) faster:
  /// that one and its time (else unset).
  std::optional<Algorithm> fastest_algorithm;
  std::optional<Protocol> fastest_protocol;
  double fastest_time_s = 0;
  /// NCCL's own predicted time of the chosen cell, s (0 where NCCL's table is not restated).
  double nccl_predicted_s = 0;
};

/// Runs plans on an engine with NCCL's cost model and the profile's corrections. Identical
/// phases (same transfers) are solved once and reused; the fabric state is fixed for the
/// simulator's lifetime (make a new simulator for another state).
class CollectiveSimulator {
 public:
  CollectiveSimulator(const topology::Fabric& fabric, const topology::FabricState* state,
                      const calibrate::Profile& profile, std::unique_ptr<Engine> engine);

  /// Simulates with the given choice; what is left open is taken at minimum predicted time
  /// among the algorithms the profile calibrates and the protocols its NCCL tables define.
  CollectiveResult run(CollectiveOp op, const Choice& choice,
                       const std::vector<std::vector<int>>& groups, double bytes);
  /// The same from text (scenario and CLI edges): op name and "auto" / "ring" / "ring/ll".
  CollectiveResult run(const std::string& op, const std::string& choice,
                       const std::vector<std::vector<int>>& groups, double bytes);
  /// Link bytes of the last phase solved (for link-utilization views).
  [[nodiscard]] const std::vector<double>& last_link_bytes() const { return last_link_bytes_; }
  [[nodiscard]] std::size_t phases_solved() const { return phases_solved_; }
  /// The NCCL model in use (null for a legacy profile without an "nccl" section).
  [[nodiscard]] const NcclModel* model() const { return model_ ? &*model_ : nullptr; }
  /// NCCL's tuner (null when the profile has no tuner figures).
  [[nodiscard]] const NcclTuner* tuner() const { return tuner_ ? &*tuner_ : nullptr; }
  /// The links NCCL sees for a group of `ranks` GPUs over `nodes` servers of this fabric.
  [[nodiscard]] NcclLinks nccl_links(int ranks, int nodes) const;

 private:
  struct Solved {
    double makespan_per_byte = 0;
    std::vector<float> link_bytes_per_byte;
  };
  /// Runs `plan` (planned at plan.bytes) for a collective of `bytes`: plans are linear in the
  /// size and phase solves scale-free, so one plan serves every size of a sweep.
  CollectiveResult run_plan(const Plan& plan, Protocol protocol, double bytes);
  /// The plan of (op, algorithm) on these groups: the last one made if the groups are the same
  /// (a sweep over sizes plans once: 2.1 million transfers for a 4,096-GPU all-to-all).
  const Plan& plan_for(CollectiveOp op, Algorithm algorithm,
                       const std::vector<std::vector<int>>& groups, double bytes);
  /// Link-limited makespan of a phase. Fluid max-min with a common start and no latency is
  /// scale-free (rates do not depend on bytes), so makespans are cached per byte of the
  /// collective's size and one solve serves every size of a sweep.
  const Solved& solve_phase(const Phase& phase, double bytes);
  const calibrate::CollectiveCurve& curve(const Phase& phase, Protocol protocol,
                                          double bytes) const;

  const topology::Fabric* fabric_;
  const topology::FabricState* state_;
  const calibrate::Profile* profile_;
  std::optional<NcclModel> model_;
  std::optional<NcclTuner> tuner_;
  std::unique_ptr<Engine> engine_;
  topology::Router router_;
  std::vector<double> capacity_;
  std::map<std::uint64_t, Solved> phase_cache_;  ///< by phase signature
  struct Planned {
    std::vector<std::vector<int>> groups;
    Plan plan;
  };
  std::map<std::pair<CollectiveOp, Algorithm>, Planned> plans_;  ///< the last plan of each
  std::vector<double> last_link_bytes_;
  std::size_t phases_solved_ = 0;
};

}  // namespace twin::netsim
