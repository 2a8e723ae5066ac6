#pragma once
// Helpers shared by the test suites.

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace twin::test {

/// Runs `fn`, expects a core::Error, and returns it (a failure is recorded if none is thrown).
template <class Fn>
core::Error error_of(Fn fn) {
  try {
    fn();
  } catch (const core::Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error raised";
  return core::Error("", "", "");
}

}  // namespace twin::test
