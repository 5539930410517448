// Turns.cpp: the calling thread's place in its sequence's schedule.
#include "renderer/device/Turns.h"

namespace gpufuzz {

namespace {
struct Place {
  unsigned thread = 0;
  Turns* turns = nullptr;
};
thread_local Place place;
}  // namespace

CallerThread::CallerThread(unsigned thread, Turns* turns) {
  place = Place{thread, turns};
}

CallerThread::~CallerThread() {
  place = Place{};
}

unsigned callerThread() {
  return place.thread;
}

void takeTurn(bool inside) {
  if (place.turns != nullptr) place.turns->yield(place.thread, inside);
}

void leaveTurns() {
  if (place.turns != nullptr) place.turns->leave(place.thread);
}

void rejoinTurns() {
  if (place.turns != nullptr) place.turns->rejoin(place.thread);
}

}  // namespace gpufuzz
