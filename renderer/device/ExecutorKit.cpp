// ExecutorKit.cpp: the comparison of an executor's table with its model file, and the leak report.
#include "renderer/device/ExecutorKit.h"

#include <algorithm>

namespace gpufuzz::kit {

namespace {

template <typename Range, typename Value>
bool has(const Range& range, const Value& value) {
  return std::find(range.begin(), range.end(), value) != range.end();
}

}  // namespace

std::vector<std::string> tableDisagreements(const TableShape& table, const ModelOutline& model) {
  const std::string executor = "the " + std::string(table.model) + " executor's table";
  const std::string file = "model " + model.name;
  std::vector<std::string> found;
  for (const std::string& op : model.operations) {
    const auto handlers = std::count(table.operations.begin(), table.operations.end(), op);
    if (handlers == 0)
      found.push_back(file + "'s operation " + op + " has no handler in " + executor);
    if (handlers > 1)
      found.push_back(executor + " has " + std::to_string(handlers) + " handlers for operation " +
                      op);
  }
  for (const std::string_view op : table.operations) {
    if (!has(model.operations, op)) {
      found.push_back(executor + " has a handler for " + std::string(op) + ", which " + file +
                      " lacks");
    }
  }
  for (const std::string& kind : model.kinds) {
    if (!has(model.releasedByDefault, kind) && !has(table.overrides, kind)) {
      found.push_back(file + "'s kind " + kind + " has no default release and " + executor +
                      " no override for it");
    }
  }
  for (const std::string_view kind : table.overrides) {
    if (!has(model.kinds, kind)) {
      found.push_back(executor + " overrides the release of " + std::string(kind) + ", which " +
                      file + " lacks");
    }
  }
  return found;
}

std::string LeakReport::text() const {
  std::string text;
  for (const std::string& finding : findings_)
    text += (text.empty() ? "" : "; ") + finding;
  return text;
}

}  // namespace gpufuzz::kit
