#pragma once
/// Ordered parallel loops: independent work items run on threads, results handed over in index
/// order, so what a caller writes or accumulates is identical for any thread count.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace twin::core {

/// Runs `work(i)` for i in [0, n) on `threads` threads (at least 1) and calls `done(i, result)`
/// in index order, one call at a time. An exception in a work item stops handing out new items
/// and is rethrown once every thread has finished. With `unit` set ("trials", "points"), a
/// progress bar with an ETA is drawn on stderr.
template <class Work, class Done>
void ordered_parallel(int n, int threads, Work work, Done done, const char* unit = nullptr) {
  using Result = std::invoke_result_t<Work&, int>;
  std::vector<std::optional<Result>> results(static_cast<std::size_t>(std::max(0, n)));
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
      results[static_cast<std::size_t>(i)] = std::move(r);
      while (flushed < n && results[static_cast<std::size_t>(flushed)]) {
        done(flushed, *results[static_cast<std::size_t>(flushed)]);
        results[static_cast<std::size_t>(flushed)].reset();  // handed over: free it
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
  for (int t = 1; t < std::max(1, threads); ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace twin::core
