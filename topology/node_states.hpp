#pragma once
/// Host states from the scheduler: the output of Slurm's `sinfo -N -h -o "%N %T"`, one
/// "<node name> <state>" per line (a node in several partitions is listed once per partition;
/// the worst listing wins).
///
/// States (sinfo(1), "NODE STATE CODES"): down, fail, failing, no_respond, inval, future,
/// powered_down and any state flagged `*` (not responding) or `~` (powered off) are down;
/// drained, draining, drain, maint, reboot_issued, reboot_requested are drained; idle,
/// allocated, mixed, completing, reserved, planned, blocked, cloud, powering_up are up.
/// Compound states ("idle+drain") take their worst part. Anything else is an error naming the
/// line: a silent default would put a job on a broken node.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topology/fabric.hpp"

namespace twin::topology {

struct NodeStateEntry {
  std::string name;
  HostState state = HostState::up;
  std::string slurm_state;
  int line = 0;
};

std::vector<NodeStateEntry> parse_node_states(std::string_view text, const std::string& source);
std::vector<NodeStateEntry> read_node_states(const std::string& path);
/// Parses one Slurm state word; throws core::Error if it is not one.
HostState parse_slurm_state(std::string_view state, const std::string& source, int line);

/// Hosts named by the entries (exact name, else case-insensitive, else the short name of an
/// FQDN). Names not on the fabric are skipped (the scheduler also knows nodes without an IB
/// adapter); if none matches, the file is for another cluster and that is an error.
std::vector<std::pair<int, HostState>> resolve_node_states(
    const std::vector<NodeStateEntry>& entries, const std::vector<std::string>& host_names,
    const std::string& source);

}  // namespace twin::topology
