// Deadline.cpp: deadline calibration.
#include "harness/Deadline.h"

#include <algorithm>
#include <cstdio>

#include "renderer/InputError.h"

namespace gpufuzz {

DeadlineSettings DeadlineSettings::forBackend(const std::string& backend) {
  DeadlineSettings s;
  if (backend == "cuda") {
    // Context create ~110-145 ms, destroy ~55-75 ms, with queued work up to ~640 ms; cuInit in a
    // fresh process 100-240 ms (measured on the H200).
    s.floor = Millis{3'000};
    s.ceiling = Millis{30'000};
    s.start = Millis{20'000};
    s.confirmFactor = 4;
    s.confirmFloor = Millis{20'000};
  }
  return s;
}

std::optional<Millis> parseDeadlineOption(const std::string& text) {
  if (text == "auto") return std::nullopt;
  if (text.empty() || text.size() > 9 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw InputError("--deadline: '" + text + "' is neither 'auto' nor a number of milliseconds");
  }
  const long ms = std::stol(text);
  if (ms < 1) throw InputError("--deadline: must be at least 1 ms");
  return Millis{ms};
}

void DeadlineCalibrator::observe(std::chrono::microseconds elapsed) {
  std::lock_guard lock(mutex_);
  if (recent_.size() < kWindow) {
    recent_.push_back(elapsed);
  } else {
    recent_[next_] = elapsed;
    next_ = (next_ + 1) % kWindow;
  }
}

std::chrono::microseconds DeadlineCalibrator::percentile99() const {
  if (recent_.empty()) return std::chrono::microseconds{0};
  std::vector<std::chrono::microseconds> sorted = recent_;
  const std::size_t rank = (sorted.size() * 99) / 100;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(rank),
                   sorted.end());
  return sorted[rank];
}

Millis DeadlineCalibrator::deadline() const {
  if (settings_.fixed) return *settings_.fixed;
  std::lock_guard lock(mutex_);
  const auto scaled = std::chrono::duration_cast<Millis>(percentile99() * settings_.factor);
  return std::clamp(scaled, settings_.floor, settings_.ceiling);
}

Millis DeadlineCalibrator::confirmationDeadline() const {
  return std::clamp(deadline() * settings_.confirmFactor, settings_.confirmFloor,
                    std::max(settings_.confirmFloor, settings_.ceiling * 2));
}

std::string DeadlineCalibrator::describe() const {
  char text[160];
  if (settings_.fixed) {
    std::snprintf(text, sizeof text, "%lld ms (fixed)",
                  static_cast<long long>(settings_.fixed->count()));
    return text;
  }
  std::chrono::microseconds p99;
  {
    std::lock_guard lock(mutex_);
    p99 = percentile99();
  }
  std::snprintf(text, sizeof text, "%lld ms (auto: %u x p99 %.2f ms, floor %lld ms)",
                static_cast<long long>(deadline().count()), settings_.factor,
                static_cast<double>(p99.count()) / 1000.0,
                static_cast<long long>(settings_.floor.count()));
  return text;
}

}  // namespace gpufuzz
