// ClaimsTest.cpp: a persistent failure's cause is examined by one worker at a time; the others'
// failures of it wait for its verdict, across claims that end without one, to the campaign's end.
#include "harness/campaign/Claims.h"

#include <gtest/gtest.h>

#include <latch>
#include <thread>

namespace gpufuzz {
namespace {

const std::string kOom = "error; says cuMemPoolCreate: CUDA_ERROR_OUT_OF_MEMORY";
const std::string kCrash = "crash; frames releasePoolBlocks tearDownPool cuMemPoolDestroy";

/// Two workers' ids, and the queued claims' (no thread's). The threads live as long as their ids:
/// a finished thread's id may be given to the next.
struct Owners {
  std::latch done{1};
  std::jthread ta{[this] { done.wait(); }}, tb{[this] { done.wait(); }};
  Claims::Owner a = ta.get_id(), b = tb.get_id(), queued{};
  ~Owners() { done.count_down(); }
};

KnownAs knowing(std::map<std::string, std::string> known) {
  return [known = std::move(known)](const std::string& cause) {
    const auto it = known.find(cause);
    return it == known.end() ? std::string() : it->second;
  };
}

std::function<bool(const std::string&, Claims::Owner)> heldBy(Claims::Owner owner) {
  return [owner](const std::string&, Claims::Owner holder) { return holder == owner; };
}

TEST(Claims, TheFirstWorkerClaimsACauseAndTheOthersFailuresAreDeferredToIt) {
  const Owners o;
  Claims claims;
  EXPECT_TRUE(claims.claimOrDefer(kOom, o.a, OutcomeClass::Error));
  EXPECT_TRUE(claims.claimOrDefer(kOom, o.a, OutcomeClass::Error));  // its own claim again
  EXPECT_FALSE(claims.claimOrDefer(kOom, o.b, OutcomeClass::Error));
  EXPECT_FALSE(claims.claimOrDefer(kOom, o.b, OutcomeClass::Error));
  EXPECT_TRUE(claims.claimOrDefer(kCrash, o.b, OutcomeClass::Crash));
  EXPECT_EQ(claims.waiting(), 2U);
  EXPECT_EQ(claims.heldBy(o.a), std::vector<std::string>{kOom});
  EXPECT_EQ(claims.heldBy(o.b), std::vector<std::string>{kCrash});
}

// The H200 night's shape: an examination recorded another cause, or none. Before, the failures
// deferred to it were unexamined at once; now the next failure of their cause claims it anew.
TEST(Claims, AClaimEndedWithoutAVerdictLeavesItsDeferredFailuresForTheNextClaim) {
  const Owners o;
  Claims claims;
  ASSERT_TRUE(claims.claimOrDefer(kOom, o.a, OutcomeClass::Error));
  ASSERT_FALSE(claims.claimOrDefer(kOom, o.b, OutcomeClass::Error));
  ASSERT_FALSE(claims.claimOrDefer(kOom, o.b, OutcomeClass::Error));
  EXPECT_TRUE(claims.end(heldBy(o.a), knowing({})).empty());
  EXPECT_TRUE(claims.heldBy(o.a).empty());
  EXPECT_EQ(claims.waiting(), 2U);
  // The next failure of the cause, met by the other worker, claims it.
  EXPECT_TRUE(claims.claimOrDefer(kOom, o.b, OutcomeClass::Error));
  ASSERT_FALSE(claims.claimOrDefer(kOom, o.a, OutcomeClass::Error));
  // Its verdict records the cause: the three deferred failures are its hits.
  const std::vector<DeferredHits> hits = claims.end(heldBy(o.b), knowing({{kOom, kOom}}));
  ASSERT_EQ(hits.size(), 1U);
  EXPECT_EQ(hits[0].as, kOom);
  EXPECT_EQ(hits[0].hits, 3U);
  EXPECT_EQ(claims.waiting(), 0U);
}

TEST(Claims, ACauseKnownAsAnotherSettlesAsThatCausesHits) {
  const Owners o;
  Claims claims;
  ASSERT_TRUE(claims.claimOrDefer(kCrash, o.a, OutcomeClass::Crash));
  ASSERT_FALSE(claims.claimOrDefer(kCrash, o.b, OutcomeClass::Crash));
  const auto hits = claims.end(heldBy(o.a), knowing({{kCrash, "crash; frames cuMemPoolDestroy"}}));
  ASSERT_EQ(hits.size(), 1U);
  EXPECT_EQ(hits[0].as, "crash; frames cuMemPoolDestroy");
  EXPECT_EQ(hits[0].hits, 1U);
}

TEST(Claims, AQueuedFailureTakesItsWorkersClaimsWithIt) {
  const Owners o;
  Claims claims;
  ASSERT_TRUE(claims.claimOrDefer(kOom, o.a, OutcomeClass::Error));
  ASSERT_TRUE(claims.claimOrDefer(kCrash, o.a, OutcomeClass::Crash));
  EXPECT_EQ(claims.handOver(o.a, o.queued), (std::vector<std::string>{kCrash, kOom}));
  EXPECT_TRUE(claims.heldBy(o.a).empty());
  // Its worker goes on fuzzing; a failure of a queued cause waits for the queued verdict.
  EXPECT_FALSE(claims.claimOrDefer(kOom, o.a, OutcomeClass::Error));
  EXPECT_EQ(claims.take(kOom)[static_cast<std::size_t>(OutcomeClass::Error)], 1U);
  EXPECT_EQ(claims.waiting(), 0U);
}

TEST(Claims, WhatStillWaitsAtTheEndIsAHitOfACauseKnownByThenOrUnexamined) {
  const Owners o;
  Claims claims;
  ASSERT_TRUE(claims.claimOrDefer(kOom, o.a, OutcomeClass::Error));
  ASSERT_FALSE(claims.claimOrDefer(kOom, o.b, OutcomeClass::Error));
  ASSERT_TRUE(claims.claimOrDefer(kCrash, o.a, OutcomeClass::Crash));
  ASSERT_FALSE(claims.claimOrDefer(kCrash, o.b, OutcomeClass::Crash));
  ASSERT_FALSE(claims.claimOrDefer(kCrash, o.b, OutcomeClass::Spin));
  claims.end(heldBy(o.a), knowing({}));
  const LeftDeferred left = claims.takeLeft(knowing({{kCrash, kCrash}}));
  ASSERT_EQ(left.hits.size(), 1U);
  EXPECT_EQ(left.hits[0].as, kCrash);
  EXPECT_EQ(left.hits[0].hits, 2U);
  EXPECT_EQ(total(left.unexamined), 1U);
  EXPECT_EQ(left.unexamined[static_cast<std::size_t>(OutcomeClass::Error)], 1U);
  EXPECT_EQ(claims.waiting(), 0U);
}

}  // namespace
}  // namespace gpufuzz
