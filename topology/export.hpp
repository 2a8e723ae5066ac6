#pragma once
/// Fabric exports: JSON (every vertex and link), Graphviz DOT (small fabrics, for drawings) and a
/// SimGrid platform (XML, read by SimGrid-based tools and the netsim reference backend).

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "topology/fabric.hpp"
#include "topology/routing.hpp"

namespace twin::topology {

/// DOT output is refused above this many vertices: the drawing would be unreadable.
inline constexpr std::size_t kDotMaxVertices = 2000;
/// A Full-routing SimGrid platform lists one route per GPU pair: capped to keep files sane.
inline constexpr int kSimgridAllPairsMaxGpus = 256;

void write_json(std::ostream& out, const Fabric& fabric);
/// Throws core::Error if the fabric has more than kDotMaxVertices vertices.
void write_dot(std::ostream& out, const Fabric& fabric);

/// SimGrid 3.32 platform (DTD 4.1): a Full-routing zone with one host per GPU (speed is a
/// placeholder: compute is not simulated by SimGrid here), one SHARED link per directed fabric
/// link, and the route of every requested GPU pair as the list of its links — so SimGrid's
/// routes are exactly ours. With `pairs` empty, every ordered GPU pair is written (only up to
/// kSimgridAllPairsMaxGpus GPUs). Adaptive routing (a split flow) has no SimGrid equivalent and
/// is refused.
void write_simgrid_platform(std::ostream& out, const Fabric& fabric, const Router& router,
                            const std::vector<std::pair<int, int>>& pairs = {});

}  // namespace twin::topology
