#include "topology/ibnetdiscover.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <ostream>
#include <sstream>
#include <unordered_map>

#include "core/error.hpp"

namespace twin::topology {
namespace {

struct LaneRate {
  std::string_view name;
  double gbps;
};

// Data rate per lane after line coding (see the header).
constexpr LaneRate kLaneRates[] = {{"SDR", 2.0},    {"DDR", 4.0},   {"QDR", 8.0},
                                   {"FDR10", 10.0}, {"FDR", 13.64}, {"EDR", 25.0},
                                   {"HDR", 50.0},   {"NDR", 100.0}, {"XDR", 200.0}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

class LineError {
 public:
  LineError(const std::string& source, int line) : source_(source), line_(line) {}
  [[noreturn]] void operator()(std::string_view text, const std::string& reason) const {
    throw core::Error(fmt::format("line {}", line_), std::string(text.substr(0, 120)), reason,
                      source_);
  }

 private:
  const std::string& source_;
  int line_;
};

bool parse_uint(std::string_view s, int& out) {
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

bool parse_hex(std::string_view s, std::uint64_t& out) {
  if (starts_with(s, "0x")) s.remove_prefix(2);
  if (s.empty() || s.size() > 16) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return false;
    v = v * 16 + static_cast<std::uint64_t>(d);
  }
  out = v;
  return true;
}

/// Reads `"X-<hex>"` at the front of `s`; returns false on mismatch.
bool take_quoted_guid(std::string_view& s, char& type, std::uint64_t& guid) {
  if (s.size() < 4 || s[0] != '"' || s[2] != '-') return false;
  const auto close = s.find('"', 1);
  if (close == std::string_view::npos) return false;
  type = s[1];
  if (!parse_hex(s.substr(3, close - 3), guid)) return false;
  s.remove_prefix(close + 1);
  return true;
}

/// Reads `[<n>]` at the front of `s`.
bool take_bracket_int(std::string_view& s, int& v) {
  if (s.empty() || s[0] != '[') return false;
  const auto close = s.find(']');
  if (close == std::string_view::npos || !parse_uint(s.substr(1, close - 1), v)) return false;
  s.remove_prefix(close + 1);
  return true;
}

/// Skips an optional `(<hex>)` at the front of `s`.
bool skip_paren_guid(std::string_view& s) {
  if (s.empty() || s[0] != '(') return true;
  const auto close = s.find(')');
  std::uint64_t g;
  if (close == std::string_view::npos || !parse_hex(s.substr(1, close - 1), g)) return false;
  s.remove_prefix(close + 1);
  return true;
}

/// The first quoted string in `s` (without quotes), or empty.
std::string_view first_quoted(std::string_view s) {
  const auto open = s.find('"');
  if (open == std::string_view::npos) return {};
  const auto close = s.find('"', open + 1);
  if (close == std::string_view::npos) return {};
  return s.substr(open + 1, close - open - 1);
}

/// `<W>x<SPEED>` from the last token of a connection comment.
bool parse_width_speed(std::string_view comment, int& width, std::string& speed) {
  comment = trim(comment);
  const auto space = comment.find_last_of(" \t");
  const std::string_view token =
      space == std::string_view::npos ? comment : comment.substr(space + 1);
  const auto x = token.find('x');
  if (x == std::string_view::npos || !parse_uint(token.substr(0, x), width)) return false;
  speed = std::string(token.substr(x + 1));
  return !speed.empty();
}

bool valid_width(int w) {
  return w == 1 || w == 2 || w == 4 || w == 8 || w == 12;
}

/// A libibumad / infiniband-diags diagnostic as captured with the output ("file.c:123; ...").
bool is_diagnostic(std::string_view s) {
  const auto semi = s.find(';');
  if (semi == std::string_view::npos) return false;
  const std::string_view head = s.substr(0, semi);
  const auto colon = head.rfind(':');
  int n;
  return colon != std::string_view::npos && head.find(".c") != std::string_view::npos &&
         parse_uint(head.substr(colon + 1), n);
}

}  // namespace

double lane_gbps(std::string_view speed, const std::string& source, int line) {
  for (const auto& r : kLaneRates)
    if (r.name == speed) return r.gbps;
  throw core::Error(line > 0 ? fmt::format("line {}", line) : "speed", std::string(speed),
                    "unknown InfiniBand speed (SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR)",
                    source);
}

std::string width_speed_for(double gbps) {
  for (int width : {4, 1, 2, 8, 12})
    for (const auto& r : kLaneRates)
      if (std::abs(width * r.gbps - gbps) < 1e-6 * gbps) return fmt::format("{}x{}", width, r.name);
  throw core::Error("gbps", fmt::format("{}", gbps),
                    "no InfiniBand width x speed carries this rate (4xNDR = 400, 4xHDR = 200, "
                    "4xEDR = 100 Gb/s, ...)");
}

IbnetFile parse_ibnetdiscover(std::string_view text, const std::string& source) {
  IbnetFile out;
  out.source = source;
  struct PendingLink {
    int node, port;
    std::uint64_t peer_guid;
    char peer_type;
    int peer_port;
    int width;
    std::string speed;
    int line;
  };
  std::vector<PendingLink> pending;
  std::unordered_map<std::uint64_t, int> by_guid;
  std::uint64_t sysimg = 0;
  int current = -1;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    const LineError fail(source, line_no);
    std::string_view s = trim(raw);
    if (s.empty() || s[0] == '#') continue;
    if (starts_with(s, "Non-Chassis Nodes") || starts_with(s, "Chassis ")) continue;
    if (starts_with(s, "vendid=") || starts_with(s, "devid=") || starts_with(s, "caguid=") ||
        starts_with(s, "switchguid=") || starts_with(s, "rtguid=")) {
      current = -1;  // a new node block starts
      continue;
    }
    if (starts_with(s, "sysimgguid=")) {
      if (!parse_hex(s.substr(11), sysimg)) fail(s, "sysimgguid is not a hexadecimal GUID");
      current = -1;
      continue;
    }
    if (starts_with(s, "Switch") || starts_with(s, "Ca") || starts_with(s, "Rt")) {
      IbNode node;
      node.line = line_no;
      std::size_t word = s.find_first_of(" \t");
      const std::string_view type = s.substr(0, word);
      if (type == "Switch")
        node.type = IbNodeType::switch_node;
      else if (type == "Ca")
        node.type = IbNodeType::ca;
      else if (type == "Rt")
        node.type = IbNodeType::router;
      else
        fail(s, "unrecognised line (expected a node line: Switch, Ca or Rt)");
      std::string_view rest = trim(s.substr(word == std::string_view::npos ? s.size() : word));
      word = rest.find_first_of(" \t");
      if (word == std::string_view::npos || !parse_uint(rest.substr(0, word), node.port_count) ||
          node.port_count < 1 || node.port_count > 255)
        fail(s, "port count missing or not within 1..255");
      rest = trim(rest.substr(word));
      char tag;
      if (!take_quoted_guid(rest, tag, node.guid)) fail(s, "node id \"X-<guid>\" missing");
      const char want = node.type == IbNodeType::switch_node ? 'S'
                        : node.type == IbNodeType::ca        ? 'H'
                                                             : 'R';
      if (tag != want) fail(s, fmt::format("a {} id must start with \"{}-\"", type, want));
      const auto hash = rest.find('#');
      if (hash != std::string_view::npos)
        node.description = std::string(first_quoted(rest.substr(hash)));
      node.sysimgguid = sysimg;
      node.ports.resize(static_cast<std::size_t>(node.port_count) + 1);
      if (!by_guid.emplace(node.guid, static_cast<int>(out.nodes.size())).second)
        fail(s, fmt::format("GUID {:016x} already described at line {}", node.guid,
                            out.nodes[static_cast<std::size_t>(by_guid[node.guid])].line));
      current = static_cast<int>(out.nodes.size());
      out.nodes.push_back(std::move(node));
      sysimg = 0;
      continue;
    }
    if (s[0] == '[') {
      if (current < 0) fail(s, "port line outside a node block");
      PendingLink link{current, 0, 0, 0, 0, 0, {}, line_no};
      std::string_view rest = s;
      if (!take_bracket_int(rest, link.port)) fail(s, "port number \"[n]\" malformed");
      if (!skip_paren_guid(rest)) fail(s, "port GUID \"(<hex>)\" malformed");
      rest = trim(rest);
      if (starts_with(rest, "[ext")) {  // chassis external port label: "[ext 1]"
        const auto close = rest.find(']');
        rest = trim(rest.substr(close == std::string_view::npos ? rest.size() : close + 1));
      }
      if (!take_quoted_guid(rest, link.peer_type, link.peer_guid))
        fail(s, "peer \"X-<guid>\" missing (truncated line?)");
      if (!take_bracket_int(rest, link.peer_port)) fail(s, "peer port \"[n]\" missing");
      if (!skip_paren_guid(rest)) fail(s, "peer port GUID \"(<hex>)\" malformed");
      const auto hash = rest.find('#');
      if (hash == std::string_view::npos ||
          !parse_width_speed(rest.substr(hash + 1), link.width, link.speed))
        fail(s,
             "link width and speed (e.g. 4xNDR) missing at the end of the line (truncated "
             "file?)");
      if (!valid_width(link.width))
        fail(s, fmt::format("link width {}x is not 1, 2, 4, 8 or 12", link.width));
      lane_gbps(link.speed, source, line_no);
      const IbNode& node = out.nodes[static_cast<std::size_t>(current)];
      if (link.port < 1 || link.port > node.port_count)
        fail(s, fmt::format("port {} is past this node's {} ports (node at line {})", link.port,
                            node.port_count, node.line));
      auto& slot =
          out.nodes[static_cast<std::size_t>(current)].ports[static_cast<std::size_t>(link.port)];
      if (slot.line != 0)
        fail(s, fmt::format("port {} already has a link (line {})", link.port, slot.line));
      slot.line = line_no;
      pending.push_back(std::move(link));
      continue;
    }
    if (is_diagnostic(s)) {
      out.warnings.push_back(fmt::format("line {}: diagnostic skipped: {}", line_no, s));
      continue;
    }
    fail(s, "unrecognised line (not a comment, node block header, node line or port line)");
  }
  if (out.nodes.empty())
    throw core::Error("nodes", "", "no node blocks found: not an ibnetdiscover topology file",
                      source);

  // Resolve peers, then check that both ends agree.
  for (const auto& p : pending) {
    const LineError fail(source, p.line);
    auto it = by_guid.find(p.peer_guid);
    if (it == by_guid.end())
      fail(fmt::format("{:016x}", p.peer_guid),
           "link to a GUID with no node block in the file (truncated file?)");
    const IbNode& peer = out.nodes[static_cast<std::size_t>(it->second)];
    const char want = peer.type == IbNodeType::switch_node ? 'S'
                      : peer.type == IbNodeType::ca        ? 'H'
                                                           : 'R';
    if (p.peer_type != want)
      fail(fmt::format("{}-{:016x}", p.peer_type, p.peer_guid),
           fmt::format("the peer is described as a different node type at line {}", peer.line));
    if (p.peer_port < 1 || p.peer_port > peer.port_count)
      fail(fmt::format("[{}]", p.peer_port),
           fmt::format("peer port {} is past the peer's {} ports (node at line {})", p.peer_port,
                       peer.port_count, peer.line));
    auto& slot =
        out.nodes[static_cast<std::size_t>(p.node)].ports[static_cast<std::size_t>(p.port)];
    slot.peer = it->second;
    slot.peer_port = p.peer_port;
    slot.width = p.width;
    slot.speed = p.speed;
  }
  for (std::size_t n = 0; n < out.nodes.size(); ++n) {
    const IbNode& node = out.nodes[n];
    for (int port = 1; port <= node.port_count; ++port) {
      const IbPortLink& mine = node.ports[static_cast<std::size_t>(port)];
      if (mine.peer < 0) continue;
      const LineError fail(source, mine.line);
      const IbNode& peer = out.nodes[static_cast<std::size_t>(mine.peer)];
      const IbPortLink& back = peer.ports[static_cast<std::size_t>(mine.peer_port)];
      if (back.line == 0)
        fail(fmt::format("[{}] -> {:016x}[{}]", port, peer.guid, mine.peer_port),
             fmt::format("the other end (node at line {}) does not list this link (truncated "
                         "file?)",
                         peer.line));
      if (back.peer != static_cast<int>(n) || back.peer_port != port)
        fail(fmt::format("[{}] -> {:016x}[{}]", port, peer.guid, mine.peer_port),
             fmt::format("two links on one port: line {} connects that port elsewhere", back.line));
      const auto self = static_cast<int>(n);
      if (!(self < mine.peer || (self == mine.peer && port < mine.peer_port))) continue;
      // The ends may disagree when the sweep caught a link retraining (the ibnetdiscover(8)
      // example itself has one): the link carries the lower rate, and the file says so.
      IbLink link{self,
                  port,
                  mine.peer,
                  mine.peer_port,
                  mine.width,
                  mine.speed,
                  mine.width * lane_gbps(mine.speed),
                  mine.line};
      const double back_gbps = back.width * lane_gbps(back.speed);
      if (back.width != mine.width || back.speed != mine.speed) {
        out.warnings.push_back(fmt::format(
            "line {}: {}x{} but the other end (line {}) reports {}x{}; taking the lower", mine.line,
            mine.width, mine.speed, back.line, back.width, back.speed));
        if (back_gbps < link.gbps) {
          link.width = back.width;
          link.speed = back.speed;
          link.gbps = back_gbps;
        }
      }
      out.links.push_back(std::move(link));
    }
  }
  return out;
}

IbnetFile read_ibnetdiscover(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::Error("", "", "cannot open ibnetdiscover file", path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse_ibnetdiscover(buffer.str(), path);
}

void write_ibnetdiscover(std::ostream& out, const IbnetFile& file) {
  out << "#\n# Topology file: written by clustertwin (ibnetdiscover grammar)\n#\n";
  auto id = [&](const IbNode& n) {
    const char t = n.type == IbNodeType::switch_node ? 'S' : n.type == IbNodeType::ca ? 'H' : 'R';
    return fmt::format("\"{}-{:016x}\"", t, n.guid);
  };
  for (const IbNode& n : file.nodes) {
    out << "\nvendid=0x2c9\ndevid=0x0\n";
    if (n.sysimgguid != 0) out << fmt::format("sysimgguid=0x{:x}\n", n.sysimgguid);
    if (n.type == IbNodeType::switch_node) {
      out << fmt::format("switchguid=0x{:x}({:x})\n", n.guid, n.guid);
      out << fmt::format("Switch\t{} {}\t\t# \"{}\" enhanced port 0 lid 0 lmc 0\n", n.port_count,
                         id(n), n.description);
    } else {
      out << fmt::format("caguid=0x{:x}\n", n.guid);
      out << fmt::format("{}\t{} {}\t\t# \"{}\"\n", n.type == IbNodeType::ca ? "Ca" : "Rt",
                         n.port_count, id(n), n.description);
    }
    for (int port = 1; port <= n.port_count; ++port) {
      const IbPortLink& l = n.ports[static_cast<std::size_t>(port)];
      if (l.peer < 0) continue;
      const IbNode& peer = file.nodes[static_cast<std::size_t>(l.peer)];
      const std::string peer_guid =
          peer.type == IbNodeType::switch_node ? "" : fmt::format("({:x})", peer.guid);
      if (n.type == IbNodeType::switch_node)
        out << fmt::format("[{}]\t{}[{}]{}\t\t# \"{}\" lid 0 {}x{}\n", port, id(peer), l.peer_port,
                           peer_guid, peer.description, l.width, l.speed);
      else
        out << fmt::format("[{}]({:x})\t{}[{}]{}\t\t# lid 0 lmc 0 \"{}\" lid 0 {}x{}\n", port,
                           n.guid, id(peer), l.peer_port, peer_guid, peer.description, l.width,
                           l.speed);
    }
  }
}

}  // namespace twin::topology
