#pragma once
/// Simulated time and a deterministic event queue.
///
/// Time is an integer count of nanoseconds (SimTime). Integers keep event order exact and
/// reproducible: two events computed to happen "at the same time" really compare equal, and no
/// rounding drift accumulates over a multi-week campaign (2^63 ns is 292 years).
///
/// Ties are broken by insertion sequence (the ns-3 rule): among events at equal times, the one
/// scheduled first runs first. Together with seeded RNGs this makes a simulation bit-identical
/// across runs and platforms.

#include <cmath>
#include <cstdint>
#include <queue>
#include <stdexcept>
#include <utility>
#include <vector>

namespace twin::core {

/// Simulated time in integer nanoseconds.
struct SimTime {
  std::int64_t ns = 0;

  static constexpr SimTime from_ns(std::int64_t v) { return SimTime{v}; }
  /// Seconds to SimTime, rounded to the nearest nanosecond.
  static SimTime from_seconds(double s) { return SimTime{std::llround(s * 1e9)}; }
  [[nodiscard]] constexpr double seconds() const { return static_cast<double>(ns) * 1e-9; }

  friend constexpr auto operator<=>(SimTime, SimTime) = default;
  friend constexpr SimTime operator+(SimTime a, SimTime b) { return SimTime{a.ns + b.ns}; }
  friend constexpr SimTime operator-(SimTime a, SimTime b) { return SimTime{a.ns - b.ns}; }
};

/// A min-queue of events ordered by (time, insertion sequence).
template <class Payload>
class EventQueue {
 public:
  struct Event {
    SimTime time;
    std::uint64_t sequence;
    Payload payload;
  };

  void push(SimTime time, Payload payload) {
    heap_.push(Event{time, next_sequence_++, std::move(payload)});
  }
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  [[nodiscard]] std::size_t size() const { return heap_.size(); }
  [[nodiscard]] const Event& top() const { return heap_.top(); }
  Event pop() {
    if (heap_.empty()) throw std::logic_error("EventQueue::pop on an empty queue");
    Event e = heap_.top();
    heap_.pop();
    return e;
  }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time) return a.time > b.time;
      return a.sequence > b.sequence;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::uint64_t next_sequence_ = 0;
};

}  // namespace twin::core
