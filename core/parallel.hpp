#pragma once
/// Ordered parallel loops: independent work items run on threads, results handed over in index
/// order, so what a caller writes or accumulates is identical for any thread count.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

namespace twin::core {

/// Most threads a loop starts, whatever is asked: more is a typo, not a machine.
inline constexpr int kMaxWorkerThreads = 1024;

/// Threads for `items` work items: `requested` (0: the hardware's cores), never more than the
/// items or kMaxWorkerThreads, at least 1.
inline int worker_threads(int requested, int items) {
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int wanted = requested > 0 ? requested : hardware;
  return std::max(1, std::min({wanted, std::max(1, items), kMaxWorkerThreads}));
}

/// Runs `work(i)` for i in [0, n) on `threads` threads (capped by worker_threads; fewer when the
/// system refuses to start more) and calls `done(i, result)` in index order, one call at a time.
/// Only results waiting for an earlier index are held, so memory does not grow with n. An
/// exception in a work item stops handing out new items and is rethrown once every thread has
/// finished. With `unit` set ("trials", "points"), a progress bar with an ETA is drawn on stderr.
template <class Work, class Done>
void ordered_parallel(int n, int threads, Work work, Done done, const char* unit = nullptr) {
  using Result = std::invoke_result_t<Work&, int>;
  std::map<int, Result> pending;  // finished, waiting for an earlier index
  std::atomic<int> next{0};
  std::mutex mutex;
  std::exception_ptr failure;
  int flushed = 0;
  const auto start = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (int i; (i = next.fetch_add(1)) < n;) {
      std::optional<Result> r;
      try {
        r.emplace(work(i));
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
        next = n;  // stop handing out work
        return;
      }
      std::lock_guard<std::mutex> lock(mutex);
      pending.emplace(i, std::move(*r));
      for (auto it = pending.begin(); it != pending.end() && it->first == flushed;
           it = pending.erase(it)) {
        done(flushed, it->second);
        ++flushed;
      }
      if (unit != nullptr) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const int width = 30, filled = n > 0 ? width * flushed / n : width;
        std::fprintf(stderr, "\r[%s%s] %d/%d %s, ETA %.0f s ", std::string(filled, '#').c_str(),
                     std::string(width - filled, ' ').c_str(), flushed, n, unit,
                     flushed > 0 ? elapsed / flushed * (n - flushed) : 0.0);
        if (flushed == n) std::fprintf(stderr, "\n");
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < worker_threads(threads, n); ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // the system will not start more threads: run on those there are
    }
  }
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace twin::core
