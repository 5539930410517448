// Shrinker.hpp: the bounded parallel map the shrinker and explainer use.
#pragma once

#include <atomic>
#include <thread>

namespace gpufuzz {

template <typename T>
std::vector<T> runConcurrently(std::size_t count, unsigned jobs,
                               const std::function<T(std::size_t)>& task) {
  std::vector<T> results(count);
  std::atomic<std::size_t> next{0};
  const auto worker = [&] {
    for (std::size_t i = next++; i < count; i = next++)
      results[i] = task(i);
  };
  std::vector<std::jthread> threads;
  const std::size_t n = std::min<std::size_t>(jobs == 0 ? 1 : jobs, count);
  for (std::size_t t = 1; t < n; ++t)
    threads.emplace_back(worker);
  if (count > 0) worker();
  return results;
}

}  // namespace gpufuzz
