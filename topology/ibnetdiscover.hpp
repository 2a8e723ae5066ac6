#pragma once
/// The `ibnetdiscover` topology file: what a subnet sweep saw, node by node and port by port.
///
/// Grammar (ibnetdiscover(8), "TOPOLOGY FILE FORMAT"; data/ibnetdiscover/README.md):
///   # comments and header lines
///   vendid=0x.. / devid=0x.. / sysimgguid=0x.. / switchguid=0x..(..) / caguid=0x.. / rtguid=0x..
///   <Switch|Ca|Rt> <nports> "<S|H|R>-<guid>"  # "<NodeDescription>" [base|enhanced port 0 lid ..]
///   [<port>](<portguid>)? "<S|H|R>-<peer guid>"[<peer port>](<peer portguid>)? # ... <W>x<SPEED>
/// plus `Chassis` / `Non-Chassis Nodes` grouping lines (-g) and, in captured output, libibumad
/// diagnostics such as `src/query_smp.c:195; umad ... bad status 110` (kept as warnings).
///
/// A cable appears twice, once from each end; both listings must name each other. Reading is all
/// or nothing: any malformed line, port past the node's port count, link to a GUID with no node
/// block, port used by two links, or a link the other end does not list throws core::Error with
/// the file and line number, and nothing is returned. Ends that disagree on the rate (a link
/// caught retraining) give the lower rate and a warning.
///
/// Link rate = width x lane data rate. Lane data rates (after line coding; IBTA spec vol. 2 and
/// NVIDIA's published per-generation figures): SDR 2.5 GBd 8b/10b -> 2 Gb/s, DDR 4, QDR 8,
/// FDR10 10, FDR 14.0625 GBd 64b/66b -> 13.64, EDR 25, HDR 50, NDR 100, XDR 200 Gb/s. A 4xNDR
/// port is the 400 Gb/s the generated fabrics use.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace twin::topology {

enum class IbNodeType { switch_node, ca, router };

struct IbPortLink {
  int peer = -1;  ///< node index, -1 when the port is not connected
  int peer_port = 0;
  int width = 0;      ///< lanes: 1, 2, 4, 8, 12
  std::string speed;  ///< "SDR", "QDR", "NDR", ...
  int line = 0;       ///< where this end was listed
};

struct IbNode {
  IbNodeType type = IbNodeType::ca;
  std::uint64_t guid = 0;
  std::uint64_t sysimgguid = 0;
  int port_count = 0;
  std::string description;
  int line = 0;
  std::vector<IbPortLink> ports;  ///< index = port number (0 unused for links)
};

struct IbLink {
  int a = 0, a_port = 0, b = 0, b_port = 0;  ///< a <= b by node index
  int width = 0;
  std::string speed;
  double gbps = 0;
  int line = 0;
};

struct IbnetFile {
  std::string source;
  std::vector<IbNode> nodes;
  std::vector<IbLink> links;          ///< every cable once
  std::vector<std::string> warnings;  ///< "line N: ..." for skipped diagnostics
};

/// Gb/s per lane of a speed name; throws core::Error naming it if unknown.
double lane_gbps(std::string_view speed, const std::string& source = {}, int line = 0);
/// The `<width>x<SPEED>` that carries `gbps` (4xNDR for 400); throws if none does.
std::string width_speed_for(double gbps);

/// Parses ibnetdiscover text; `source` names it in errors.
IbnetFile parse_ibnetdiscover(std::string_view text, const std::string& source);
IbnetFile read_ibnetdiscover(const std::string& path);

/// Writes nodes and links back in ibnetdiscover's grammar (both ends of every link).
void write_ibnetdiscover(std::ostream& out, const IbnetFile& file);

}  // namespace twin::topology
