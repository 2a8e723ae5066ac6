#include "netsim/vocabulary.hpp"

#include <fmt/format.h>

#include "calibrate/nccl_tests.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

namespace twin::netsim {
namespace {

constexpr std::array<std::string_view, kCollectiveOps> kOpNames = {
    "all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv", "broadcast"};
constexpr std::array<std::string_view, kAlgorithms> kAlgorithmNames = {
    "ring", "tree",         "nvls",     "nvls_tree", "sharp",
    "pat",  "hierarchical", "pairwise", "pxn",       "direct"};
constexpr std::array<std::string_view, kProtocols> kProtocolNames = {"ll", "ll128", "simple"};
constexpr std::array<std::string_view, kScopes> kScopeNames = {"intra_node", "inter_node"};
constexpr std::array<std::string_view, kHopKinds> kHopNames = {"nvlink", "pcie", "network"};

template <std::size_t N>
std::vector<std::string> names_of(const std::array<std::string_view, N>& names) {
  return {names.begin(), names.end()};
}

template <typename Enum, std::size_t N>
Enum parse(std::string_view text, const std::array<std::string_view, N>& names,
           const std::string& field, std::string_view what) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == text) return static_cast<Enum>(i);
  const auto valid = names_of(names);
  throw core::Error(field, std::string(text),
                    fmt::format("unknown {}; valid: {}{}", what, core::quoted_list(valid),
                                core::did_you_mean(text, valid)));
}

}  // namespace

std::string_view to_text(CollectiveOp op) {
  return kOpNames[static_cast<std::size_t>(op)];
}
std::string_view to_text(Algorithm a) {
  return kAlgorithmNames[static_cast<std::size_t>(a)];
}
std::string_view to_text(Protocol p) {
  return kProtocolNames[static_cast<std::size_t>(p)];
}
std::string_view to_text(Scope s) {
  return kScopeNames[static_cast<std::size_t>(s)];
}
std::string_view to_text(HopKind h) {
  return kHopNames[static_cast<std::size_t>(h)];
}

CollectiveOp parse_op(std::string_view text, const std::string& field) {
  return parse<CollectiveOp>(text, kOpNames, field, "collective");
}
Algorithm parse_algorithm(std::string_view text, const std::string& field) {
  return parse<Algorithm>(text, kAlgorithmNames, field, "algorithm");
}
Protocol parse_protocol(std::string_view text, const std::string& field) {
  return parse<Protocol>(text, kProtocolNames, field, "protocol");
}
Scope parse_scope(std::string_view text, const std::string& field) {
  return parse<Scope>(text, kScopeNames, field, "scope");
}
HopKind parse_hop(std::string_view text, const std::string& field) {
  return parse<HopKind>(text, kHopNames, field, "hop kind");
}

const std::vector<CollectiveOp>& all_ops() {
  static const std::vector<CollectiveOp> ops = {
      CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::reduce_scatter,
      CollectiveOp::alltoall,   CollectiveOp::sendrecv,   CollectiveOp::broadcast};
  return ops;
}

std::vector<std::string> op_names() {
  return names_of(kOpNames);
}
std::vector<std::string> protocol_names() {
  return names_of(kProtocolNames);
}

const std::vector<Algorithm>& algorithms_for(CollectiveOp op) {
  using A = Algorithm;
  static const std::vector<A> all_reduce = {A::ring,      A::tree,  A::nvls,
                                            A::nvls_tree, A::sharp, A::hierarchical};
  static const std::vector<A> gather_scatter = {A::ring, A::pat};
  static const std::vector<A> ring_only = {A::ring};
  static const std::vector<A> alltoall = {A::pxn, A::pairwise};
  static const std::vector<A> sendrecv = {A::direct};
  switch (op) {
    case CollectiveOp::all_reduce:
      return all_reduce;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
      return gather_scatter;
    case CollectiveOp::broadcast:
      return ring_only;
    case CollectiveOp::alltoall:
      return alltoall;
    case CollectiveOp::sendrecv:
      return sendrecv;
  }
  return ring_only;
}

std::vector<std::string> algorithm_names_for(CollectiveOp op) {
  std::vector<std::string> out;
  for (Algorithm a : algorithms_for(op)) out.emplace_back(to_text(a));
  return out;
}

double busbw_factor(CollectiveOp op, int ranks) {
  return calibrate::bus_factor(std::string(to_text(op)), ranks);
}

}  // namespace twin::netsim
