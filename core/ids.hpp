#pragma once
/// Strong, dense identifiers.
///
/// Every id wraps a uint32_t that indexes a std::vector owned by whoever issued it (a Fabric issues
/// NodeIds and LinkIds, for instance). Distinct tag types make it a compile error to index links
/// with a node id. Ids compare and hash like integers, so they can key maps and sort
/// deterministically.

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>

namespace twin::core {

template <class Tag>
class StrongId {
 public:
  using value_type = std::uint32_t;
  static constexpr value_type kInvalid = std::numeric_limits<value_type>::max();

  constexpr StrongId() = default;
  constexpr explicit StrongId(value_type v) : value_(v) {}
  /// Convenience for indices computed as size_t; the caller guarantees the value fits.
  static constexpr StrongId from_index(std::size_t i) {
    return StrongId(static_cast<value_type>(i));
  }

  [[nodiscard]] constexpr value_type value() const { return value_; }
  [[nodiscard]] constexpr std::size_t index() const { return value_; }
  [[nodiscard]] constexpr bool valid() const { return value_ != kInvalid; }

  friend constexpr auto operator<=>(StrongId, StrongId) = default;

 private:
  value_type value_ = kInvalid;
};

struct NodeTag {};
struct LinkTag {};
struct CableTag {};
struct RankTag {};
struct FlowTag {};

/// A vertex of the fabric graph: GPU, NIC, NVSwitch domain or IB switch.
using NodeId = StrongId<NodeTag>;
/// A directed link (one direction of a cable, an NVLink or a PCIe lane group).
using LinkId = StrongId<LinkTag>;
/// A physical cable: two LinkIds, one per direction.
using CableId = StrongId<CableTag>;
/// A rank of a training job.
using RankId = StrongId<RankTag>;
/// A flow in the network engine.
using FlowId = StrongId<FlowTag>;

}  // namespace twin::core

template <class Tag>
struct std::hash<twin::core::StrongId<Tag>> {
  std::size_t operator()(twin::core::StrongId<Tag> id) const noexcept {
    return std::hash<std::uint32_t>{}(id.value());
  }
};
