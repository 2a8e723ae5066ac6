#pragma once
// The profiles in profiles/*.json, embedded at build time (generated shipped_profiles.cpp).
#include <string>
#include <utility>
#include <vector>

namespace twin::calibrate::detail {
const std::vector<std::pair<std::string, std::string>>& shipped_profiles();
}
