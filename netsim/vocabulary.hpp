#pragma once
/// The one vocabulary of collectives: operation, algorithm, protocol, scope and hop kind.
///
/// Inside netsim (and everything above it) these are enums; text appears only at the edges —
/// scenario YAML, CLI options, profile JSON, printed tables — through to_text() and the
/// parse_*() functions below, which reject unknown names with the valid ones and a "did you
/// mean". Each enum is dense from 0, so it can index a table (NCCL's cost model is tables
/// indexed by algorithm and protocol: netsim/nccl_model.hpp).

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace twin::netsim {

/// Collective operations (nccl-tests names).
enum class CollectiveOp { all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast };
inline constexpr std::size_t kCollectiveOps = 6;

/// Algorithms. NCCL's own: ring, tree (double binary tree), nvls (NVSwitch reduction in one
/// node), nvls_tree (NVLS in each node + trees across nodes), sharp (NVLS + in-network reduction
/// in the IB switches, NCCL's CollNet), pat (Parallel Aggregated Trees, one GPU per node).
/// Ours beside them: hierarchical (rs / per-rail ar / ag), pairwise and pxn all-to-all,
/// direct send/recv.
enum class Algorithm {
  ring,
  tree,
  nvls,
  nvls_tree,
  sharp,
  pat,
  hierarchical,
  pairwise,
  pxn,
  direct
};
inline constexpr std::size_t kAlgorithms = 10;

/// NCCL protocols: LL (8-byte lines of 4 B data + 4 B flag), LL128 (128-byte lines of 120 B data
/// + 8 B flag), Simple (bulk copies with a fence per chunk).
enum class Protocol { ll, ll128, simple };
inline constexpr std::size_t kProtocols = 3;
inline constexpr std::array<Protocol, kProtocols> kAllProtocols = {Protocol::ll, Protocol::ll128,
                                                                   Protocol::simple};

/// Whether a collective's group spans one node or several.
enum class Scope { intra_node, inter_node };
inline constexpr std::size_t kScopes = 2;

/// The kind of hop a step crosses, as NCCL's latency table distinguishes them.
enum class HopKind { nvlink, pcie, network };
inline constexpr std::size_t kHopKinds = 3;

[[nodiscard]] std::string_view to_text(CollectiveOp op);
[[nodiscard]] std::string_view to_text(Algorithm algorithm);
[[nodiscard]] std::string_view to_text(Protocol protocol);
[[nodiscard]] std::string_view to_text(Scope scope);
[[nodiscard]] std::string_view to_text(HopKind hop);

/// Parsers for the edges. `field` names the option or key in the error (e.g. "--op").
[[nodiscard]] CollectiveOp parse_op(std::string_view text, const std::string& field = "op");
[[nodiscard]] Algorithm parse_algorithm(std::string_view text,
                                        const std::string& field = "algorithm");
[[nodiscard]] Protocol parse_protocol(std::string_view text, const std::string& field = "protocol");
[[nodiscard]] Scope parse_scope(std::string_view text, const std::string& field = "scope");
[[nodiscard]] HopKind parse_hop(std::string_view text, const std::string& field = "hop");

/// Every op, and the names of every op / protocol (for help texts and errors).
[[nodiscard]] const std::vector<CollectiveOp>& all_ops();
[[nodiscard]] std::vector<std::string> op_names();
[[nodiscard]] std::vector<std::string> protocol_names();

/// Algorithms that implement an op, in the order "auto" tries them.
[[nodiscard]] const std::vector<Algorithm>& algorithms_for(CollectiveOp op);
/// The same as names (scenario validation, help).
[[nodiscard]] std::vector<std::string> algorithm_names_for(CollectiveOp op);

/// nccl-tests' bus bandwidth factor busbw / algbw for n ranks: 2(n-1)/n all-reduce,
/// (n-1)/n all-gather, reduce-scatter and all-to-all, 1 otherwise. The canonical definition is
/// calibrate::bus_factor (the nccl-tests reader sits below netsim and knows every nccl-tests
/// op); this typed form forwards to it.
[[nodiscard]] double busbw_factor(CollectiveOp op, int ranks);

}  // namespace twin::netsim
