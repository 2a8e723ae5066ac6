#pragma once
/// From what a subnet sweep saw (IbnetFile) to a FabricPlan: which adapters are compute NICs of
/// which hosts, which switches are leaves, spines and cores, which rail each NIC and leaf is.
///
/// Rules, in order:
/// - SHARP aggregation nodes (CA "Mellanox Technologies Aggregation Node", one per Quantum
///   switch on its last, virtual port) and routers are not hosts; they are counted and left out,
///   and the switch port they take does not count toward the radix.
/// - Hosts: adapters grouped by the host name their NodeDescription starts with
///   ("a08-p1-dgx-04-c17 mlx5_5" -> "a08-p1-dgx-04-c17"). An adapter still showing the firmware
///   default ("MT4129 ConnectX7   Mellanox Technologies") names no host; such adapters group by
///   system image GUID, else each is a host of its own ("ca-<guid>"). Every connected adapter
///   port is one NIC.
/// - Tiers: switches with a NIC are tier 1 (leaves); any other switch is one more than its
///   lowest neighbour (distance from the hosts). More than 3 tiers is an error.
/// - Rails: R = the most NICs any host has. On hosts with all R, NICs in natural order of their
///   adapter names are rails 0..R-1; an adapter name maps to the rail most hosts give it, a leaf
///   to the rail most of its NICs have. A NIC with an unnamed adapter takes its leaf's rail.
///   A NIC whose rail differs from its leaf's is a cable on another rail's leaf (`topology
///   check` reports it).
/// - Pods (3 tiers): connected groups of leaves and spines without the cores; 2 tiers: one pod.
/// - Order: hosts and switches by natural name order, so an export-import round trip keeps ids.

#include "topology/fabric_plan.hpp"
#include "topology/ibnetdiscover.hpp"

namespace twin::topology {

FabricPlan plan_from_ibnetdiscover(const IbnetFile& file);

/// A switch's short name: "MF0;A09-P1-IBLEAF-04-04:MQM9701/U1" -> "A09-P1-IBLEAF-04-04".
std::string switch_short_name(const std::string& description);
/// True when `a` sorts before `b` comparing digit runs as numbers ("c2" < "c10").
bool natural_less(const std::string& a, const std::string& b);

}  // namespace twin::topology
