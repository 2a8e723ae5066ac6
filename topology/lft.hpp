#pragma once
/// A real subnet's unicast forwarding tables (LFTs), as `ibroute` / `dump_lfts.sh` print them,
/// so routes on an imported fabric follow what the subnet manager actually programmed instead of
/// the up/down tables clustertwin computes (topology/updown.hpp), whatever `fabric.routing`
/// says: a table is one deterministic port per (switch, destination), as the hardware forwards.
///
/// Grammar (infiniband-diags ibroute(8); dump_lfts.sh runs it for every switch):
///   Unicast lids [0x<first>-0x<last>] of switch <Lid N | DR path ...> guid 0x<guid> (<desc>):
///     Lid  Out   Destination          (two header lines, skipped)
///          Port     Info
///   0x<lid> <port> : (<Channel Adapter|Switch|Router> portguid 0x<guid>: '<desc>')
///   <n> valid lids dumped
/// A block per switch. The destination's port GUID in the info maps each LID to an adapter of the
/// dump (the ibnetdiscover file gives no LIDs to the import), so tables must be dumped with the
/// info (ibroute's default). Entries for switch or router LIDs are accepted and not used: only
/// adapters send and receive training traffic.
///
/// Reading is all or nothing; core::Error names the file and line for: a line that is neither,
/// an entry before any switch block, a switch GUID the fabric does not have, a port past the
/// switch's port count, an adapter GUID the fabric does not have, two entries for one adapter
/// on one switch. A route that a table does not finish (no entry, a port with no cable, a loop,
/// a cable that is down) throws when routed, naming the switch and the adapters.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "topology/fabric.hpp"
#include "topology/fabric_state.hpp"

namespace twin::topology {

struct Route;
class Router;

class ForwardingTables {
 public:
  /// Parses dump_lfts text against `fabric` (an imported one); `source` names it in errors.
  ForwardingTables(std::string_view text, const std::string& source, const Fabric& fabric);
  static ForwardingTables read(const std::string& path, const Fabric& fabric);

  /// Output port of switch `s` (0-based among the fabric's switches: leaves, spines, cores) for
  /// the adapter `nic`; 0 when the table has no entry.
  [[nodiscard]] int port(int s, int nic) const {
    return ports_[static_cast<std::size_t>(s) * nics_ + static_cast<std::size_t>(nic)];
  }
  /// Switches with a table in the file.
  [[nodiscard]] int switches_with_tables() const { return tables_; }
  [[nodiscard]] const std::string& source() const { return source_; }

  /// Appends the switch links from `src_leaf` to the destination adapter's cable (exclusive)
  /// by following the tables; returns the latency of those links and adds their cable hops.
  double route_to(Route& route, const Fabric& fabric, const FabricState* state, int src_leaf,
                  int src_nic, int dst_nic) const;

 private:
  std::string source_;
  std::size_t nics_ = 0;
  int tables_ = 0;
  std::vector<std::uint16_t> ports_;      ///< [switch * nics + nic]
  std::vector<std::vector<LinkId>> out_;  ///< [switch][port]: the link leaving through it
};

/// Writes, in dump_lfts.sh's format, the tables `router` would program on `fabric` (an imported
/// one; the router deterministic, D-mod-k): per switch and adapter the port of its route. LIDs
/// are made up (switches 1.., adapters after), GUIDs and descriptions are the dump's.
void write_lfts(std::ostream& out, const Fabric& fabric, const Router& router);

}  // namespace twin::topology
