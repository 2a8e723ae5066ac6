#pragma once
/// Cooperative cancellation.
///
/// Long work (a campaign's trials, a sweep's points, a per-rank step simulation) checks a
/// CancelToken at safe points and stops by throwing core::Cancelled; whatever was finished and
/// written stays written. The app's Cancel button, the Python module's KeyboardInterrupt and the
/// CLI's Ctrl-C handler all call cancel() on the token they passed in. A token is shared by
/// reference and may be cancelled from any thread.

#include <atomic>
#include <stdexcept>
#include <string>

namespace twin::core {

/// Thrown at a safe point after cancel(); not an error in the input or the program.
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("cancelled") {}
  /// `what` says how far the work got, e.g. "12 of 100 trials finished".
  explicit Cancelled(const std::string& what) : std::runtime_error(what) {}
};

class CancelToken {
 public:
  void cancel() noexcept { cancelled_.store(true, std::memory_order_relaxed); }
  [[nodiscard]] bool cancelled() const noexcept {
    return cancelled_.load(std::memory_order_relaxed);
  }
  /// Throws Cancelled once cancel() has been called.
  void throw_if_cancelled() const {
    if (cancelled()) throw Cancelled();
  }

 private:
  std::atomic<bool> cancelled_{false};
};

/// For optional tokens: `check(token)` with a null token never throws.
inline void check(const CancelToken* token) {
  if (token != nullptr) token->throw_if_cancelled();
}

}  // namespace twin::core
