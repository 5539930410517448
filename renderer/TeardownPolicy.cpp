// TeardownPolicy.cpp: the policies' names and defenses.
#include "renderer/TeardownPolicy.h"

#include <array>

namespace gpufuzz {

namespace {
struct PolicyRow {
  TeardownPolicy policy;
  std::string_view name;
  Defenses defenses;
};
constexpr std::array<PolicyRow, 4> kPolicies = {{
    {TeardownPolicy::Shipped, "shipped", {true, true, true}},
    {TeardownPolicy::ContextFirst, "context-first", {true, false, true}},
    {TeardownPolicy::NoDestroySync, "no-destroy-sync", {false, true, true}},
    {TeardownPolicy::NoTextureWait, "no-texture-wait", {true, true, false}},
}};
}  // namespace

Defenses defensesOf(TeardownPolicy policy) {
  return kPolicies[static_cast<std::size_t>(policy)].defenses;
}

std::string_view policyName(TeardownPolicy policy) {
  return kPolicies[static_cast<std::size_t>(policy)].name;
}

std::optional<TeardownPolicy> parsePolicy(std::string_view name) {
  for (const PolicyRow& row : kPolicies) {
    if (row.name == name) return row.policy;
  }
  return std::nullopt;
}

std::vector<std::string_view> policyNames() {
  std::vector<std::string_view> names;
  for (const PolicyRow& row : kPolicies)
    names.push_back(row.name);
  return names;
}

}  // namespace gpufuzz
