// OperationTest.cpp: the built-in models' operation declarations against the contract, names,
// operation text.
#include "model/Operation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "model/LifecycleModel.h"

namespace gpufuzz {
namespace {

const LifecycleModel& all() {
  return builtinModel("all");
}

const OpDecl& decl(std::string_view name) {
  const OpDecl* d = all().op(name);
  if (d == nullptr) throw std::invalid_argument("no operation " + std::string(name));
  return *d;
}

TEST(Operation, KindNamesFollowTheContractAndRoundTrip) {
  const std::vector<std::string_view> names = {
      "create",  "draw",       "sync",       "set_textures", "read_back",
      "destroy", "ctx_create", "buf_create", "buf_destroy",  "ctx_destroy"};
  ASSERT_EQ(all().ops.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const OpDecl& d = all().ops[i];
    EXPECT_EQ(d.name, names[i]);
    EXPECT_EQ(d.index, i);
    EXPECT_EQ(d.model, &all()) << "interned models point their operations back at themselves";
    ASSERT_NE(all().op(names[i]), nullptr) << names[i];
    EXPECT_EQ(all().op(names[i]), &d);
  }
  EXPECT_EQ(all().op("Create"), nullptr);
  EXPECT_EQ(all().op(""), nullptr);
  EXPECT_EQ(all().op("free"), nullptr);
}

// `renderer` holds the first six operations of `all`, `device` the last four, declared alike.
TEST(Operation, RendererOpsAreTheFirstSixAndDeviceOpsTheRest) {
  const LifecycleModel& renderer = builtinModel("renderer");
  const LifecycleModel& device = builtinModel("device");
  ASSERT_EQ(renderer.ops.size(), 6u);
  ASSERT_EQ(device.ops.size(), 4u);
  for (const OpDecl& d : all().ops) {
    const bool isRenderer = d.index < 6;
    EXPECT_EQ(renderer.op(d.name) != nullptr, isRenderer) << d.name;
    EXPECT_EQ(device.op(d.name) != nullptr, !isRenderer) << d.name;
    const LifecycleModel& own = isRenderer ? renderer : device;
    EXPECT_EQ(own.usage(*own.op(d.name)), all().usage(d)) << d.name;
  }
}

// The usage text shows names, keys and inclusive bounds at once: one line per contract row.
TEST(Operation, FormsMatchTheContractTables) {
  const auto usage = [](std::string_view name) { return all().usage(decl(name)); };
  EXPECT_EQ(usage("create"), "create R [width=1..4096] [height=1..4096]");
  EXPECT_EQ(usage("draw"), "draw R [triangles=1..1024] [seed=0..4294967295]");
  EXPECT_EQ(usage("sync"), "sync R");
  EXPECT_EQ(usage("set_textures"),
            "set_textures R [count=0..16] [size=1..2048] [seed=0..4294967295]");
  EXPECT_EQ(usage("read_back"), "read_back R");
  EXPECT_EQ(usage("destroy"), "destroy R");
  EXPECT_EQ(usage("ctx_create"), "ctx_create C");
  EXPECT_EQ(usage("buf_create"), "buf_create C B [bytes=1..2147483648]");
  EXPECT_EQ(usage("buf_destroy"), "buf_destroy B");
  EXPECT_EQ(usage("ctx_destroy"), "ctx_destroy C");

  const std::vector<std::pair<std::string_view, size_t>> introducing = {
      {"create", 0}, {"ctx_create", 0}, {"buf_create", 1}};
  const std::vector<std::string_view> ending = {"destroy", "buf_destroy", "ctx_destroy"};
  for (const OpDecl& f : all().ops) {
    EXPECT_FALSE(f.listSlot().has_value()) << f.name;
    for (size_t i = 0; i < f.slots.size(); ++i) {
      const bool introduces =
          std::find(introducing.begin(), introducing.end(),
                    std::pair<std::string_view, size_t>{f.name, i}) != introducing.end();
      EXPECT_EQ(f.slots[i].use == SlotUse::Introduce, introduces) << f.name << " name " << i;
      const bool ends = std::find(ending.begin(), ending.end(), f.name) != ending.end();
      EXPECT_EQ(f.slots[i].use == SlotUse::End, ends) << f.name << " name " << i;
    }
  }
  const auto kindOf = [](std::string_view op, size_t slot) {
    return all().resources[decl(op).slots[slot].kind].kind;
  };
  EXPECT_EQ(kindOf("buf_create", 0), "context");
  EXPECT_EQ(kindOf("buf_create", 1), "buffer");
  EXPECT_EQ(kindOf("buf_destroy", 0), "buffer");
  EXPECT_EQ(kindOf("draw", 0), "renderer");
  EXPECT_EQ(decl("buf_create").slots.size(), 2u);
}

TEST(Operation, DefaultsAreTheContractsAndWithinBounds) {
  for (const OpDecl& f : all().ops) {
    const Operation op = makeOperation(all(), f.name, {});
    ASSERT_EQ(op.args.size(), f.args.size()) << f.name;
    for (const ArgDecl& a : f.args) {
      EXPECT_EQ(op.arg(a.key), a.defaultValue) << f.name << " " << a.key;
      EXPECT_LE(a.min, a.defaultValue) << f.name << " " << a.key;
      EXPECT_LE(a.defaultValue, a.max) << f.name << " " << a.key;
      EXPECT_FALSE(a.isWord()) << f.name << " " << a.key;
    }
  }
  EXPECT_EQ(decl("create").arg("width")->defaultValue, 64u);
  EXPECT_EQ(decl("create").arg("height")->defaultValue, 64u);
  EXPECT_EQ(decl("draw").arg("triangles")->defaultValue, 4u);
  EXPECT_EQ(decl("draw").arg("seed")->defaultValue, 0u);
  EXPECT_EQ(decl("set_textures").arg("count")->defaultValue, 1u);
  EXPECT_EQ(decl("set_textures").arg("size")->defaultValue, 32u);
  EXPECT_EQ(decl("buf_create").arg("bytes")->defaultValue, 256u);
  EXPECT_EQ(decl("sync").arg("seed"), nullptr);
  EXPECT_EQ(decl("create").arg("seed"), nullptr);
}

TEST(Operation, ArgumentsWriteTheirOwnValueAtFullWidth) {
  for (const OpDecl& f : all().ops) {
    for (const ArgDecl& a : f.args) {
      Operation op = makeOperation(all(), f.name, {});
      op.args[*f.argIndex(a.key)] = a.max;
      EXPECT_EQ(op.arg(a.key), a.max) << f.name << " " << a.key;
      for (const ArgDecl& other : f.args) {
        if (&other != &a) {
          EXPECT_EQ(op.arg(other.key), other.defaultValue) << f.name << " " << a.key;
        }
      }
    }
  }
  EXPECT_EQ(makeOperation(all(), "buf_create", {"c0", "b0"}, {{"bytes", 1ULL << 31}}).arg("bytes"),
            1ULL << 31);
  EXPECT_THROW(makeOperation(all(), "sync", {"r0"}).arg("seed"), std::out_of_range);
}

TEST(Operation, MakeOperationRefusesWhatTheModelDoesNotDeclare) {
  EXPECT_THROW(makeOperation(all(), "frob", {"r0"}), std::invalid_argument);
  EXPECT_THROW(makeOperation(all(), "draw", {"r0"}, {{"depth", 1}}), std::invalid_argument);
  EXPECT_THROW(makeOperation(all(), "draw", {"r0"}, {{"triangles", 0}}), std::invalid_argument);
  EXPECT_THROW(makeOperation(all(), "draw", {"r0"}, {{"triangles", 1025}}), std::invalid_argument);
  EXPECT_THROW(makeOperation(builtinModel("device"), "draw", {"r0"}), std::invalid_argument);
  EXPECT_NO_THROW(makeOperation(all(), "draw", {"r0"}, {{"triangles", 1024}}));
}

TEST(Operation, TextLeavesOutDefaultArguments) {
  EXPECT_EQ(operationText(makeOperation(all(), "draw", {"r0"}, {{"triangles", 9}, {"seed", 3}})),
            "draw r0 triangles=9 seed=3");
  EXPECT_EQ(operationText(makeOperation(all(), "draw", {"r0"}, {{"seed", 3}, {"triangles", 9}})),
            "draw r0 triangles=9 seed=3")
      << "arguments are written in declaration order";
  EXPECT_EQ(operationText(makeOperation(all(), "draw", {"r0"})), "draw r0");
  EXPECT_EQ(operationText(makeOperation(all(), "draw", {"r0"}, {{"seed", 7}})), "draw r0 seed=7");
  EXPECT_EQ(operationText(makeOperation(all(), "draw", {"r0"}, {{"triangles", 4}})), "draw r0");
  EXPECT_EQ(operationText(makeOperation(all(), "create", {"r1"}, {{"height", 2}})),
            "create r1 height=2");
  EXPECT_EQ(operationText(makeOperation(all(), "set_textures", {"r0"}, {{"count", 0}})),
            "set_textures r0 count=0");
  EXPECT_EQ(
      operationText(makeOperation(all(), "buf_create", {"c0", "b0"}, {{"bytes", 1ULL << 31}})),
      "buf_create c0 b0 bytes=2147483648");
  EXPECT_EQ(operationText(makeOperation(all(), "ctx_destroy", {"c0"})), "ctx_destroy c0");
}

TEST(Operation, EqualityIgnoresTheSourceLine) {
  Operation a = makeOperation(all(), "sync", {"r0"});
  a.line = 3;
  Operation b = a;
  b.line = 9;
  EXPECT_EQ(a, b);
  b.names = {"r1"};
  EXPECT_FALSE(a == b);
  Operation c = makeOperation(all(), "read_back", {"r0"});
  EXPECT_FALSE(a == c) << "the operation's name counts";
  Operation d = makeOperation(all(), "draw", {"r0"});
  Operation e = makeOperation(all(), "draw", {"r0"}, {{"seed", 1}});
  EXPECT_FALSE(d == e) << "arguments count";
  // The same operation of two built-in models is equal: equality is by name, names, arguments.
  EXPECT_EQ(makeOperation(builtinModel("renderer"), "sync", {"r0"}), a);
}

TEST(Operation, NamesAreLowercaseWordsOfAtMost32Characters) {
  for (std::string_view good : {"a", "r0", "a_b9", "z_", "abcdefghijklmnopqrstuvwxyz012345"}) {
    EXPECT_EQ(nameError(good), "") << good;
  }
  for (std::string_view bad :
       {"", "0a", "_a", "Ab", "aB", "a-b", "a.b", "a b", "abcdefghijklmnopqrstuvwxyz0123456"}) {
    EXPECT_NE(nameError(bad).find("[a-z][a-z0-9_]*, at most 32 characters"), std::string::npos)
        << bad;
  }
}

}  // namespace
}  // namespace gpufuzz
