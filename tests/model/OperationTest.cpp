// OperationTest.cpp: the table of operation forms against the contract, names, operation text.
#include "model/Operation.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gpufuzz {
namespace {

TEST(Operation, KindNamesFollowTheContractAndRoundTrip) {
  const std::vector<std::string_view> names = {
      "create",  "draw",       "sync",       "set_textures", "read_back",
      "destroy", "ctx_create", "buf_create", "buf_destroy",  "ctx_destroy"};
  ASSERT_EQ(opForms().size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const auto kind = static_cast<OpKind>(i);
    EXPECT_EQ(opKindName(kind), names[i]);
    EXPECT_EQ(opForm(kind).kind, kind);
    EXPECT_EQ(parseOpKind(names[i]), kind);
  }
  EXPECT_EQ(parseOpKind("Create"), std::nullopt);
  EXPECT_EQ(parseOpKind(""), std::nullopt);
  EXPECT_EQ(parseOpKind("free"), std::nullopt);
}

TEST(Operation, RendererOpsAreTheFirstSix) {
  for (const OpForm& f : opForms()) {
    EXPECT_EQ(isRendererOp(f.kind), static_cast<int>(f.kind) < static_cast<int>(OpKind::CtxCreate))
        << f.name;
  }
}

// The usage text shows names, keys and inclusive bounds at once: one line per contract row.
TEST(Operation, FormsMatchTheContractTables) {
  EXPECT_EQ(opForm(OpKind::Create).usage(), "create R [width=1..4096] [height=1..4096]");
  EXPECT_EQ(opForm(OpKind::Draw).usage(), "draw R [triangles=1..1024] [seed=0..4294967295]");
  EXPECT_EQ(opForm(OpKind::Sync).usage(), "sync R");
  EXPECT_EQ(opForm(OpKind::SetTextures).usage(),
            "set_textures R [count=0..16] [size=1..2048] [seed=0..4294967295]");
  EXPECT_EQ(opForm(OpKind::ReadBack).usage(), "read_back R");
  EXPECT_EQ(opForm(OpKind::Destroy).usage(), "destroy R");
  EXPECT_EQ(opForm(OpKind::CtxCreate).usage(), "ctx_create C");
  EXPECT_EQ(opForm(OpKind::BufCreate).usage(), "buf_create C B [bytes=1..2147483648]");
  EXPECT_EQ(opForm(OpKind::BufDestroy).usage(), "buf_destroy B");
  EXPECT_EQ(opForm(OpKind::CtxDestroy).usage(), "ctx_destroy C");

  const std::vector<std::pair<OpKind, size_t>> introducing = {
      {OpKind::Create, 0}, {OpKind::CtxCreate, 0}, {OpKind::BufCreate, 1}};
  for (const OpForm& f : opForms()) {
    for (size_t i = 0; i < f.names.size(); ++i) {
      const bool expected = std::find(introducing.begin(), introducing.end(),
                                      std::pair{f.kind, i}) != introducing.end();
      EXPECT_EQ(f.names[i].introduces, expected) << f.name << " name " << i;
    }
  }
  EXPECT_EQ(opForm(OpKind::BufCreate).names[0].kind, NameKind::Context);
  EXPECT_EQ(opForm(OpKind::BufCreate).names[1].kind, NameKind::Buffer);
  EXPECT_EQ(opForm(OpKind::BufDestroy).names[0].kind, NameKind::Buffer);
}

TEST(Operation, DefaultsAreTheContractsAndWithinBounds) {
  const Operation op;
  for (const OpForm& f : opForms()) {
    for (const ArgSpec& a : f.args) {
      EXPECT_EQ(a.get(op), a.defaultValue) << f.name << " " << a.key;
      EXPECT_LE(a.min, a.defaultValue) << f.name << " " << a.key;
      EXPECT_LE(a.defaultValue, a.max) << f.name << " " << a.key;
    }
  }
  EXPECT_EQ(opForm(OpKind::Create).arg("width")->defaultValue, 64u);
  EXPECT_EQ(opForm(OpKind::Draw).arg("triangles")->defaultValue, 4u);
  EXPECT_EQ(opForm(OpKind::SetTextures).arg("count")->defaultValue, 1u);
  EXPECT_EQ(opForm(OpKind::SetTextures).arg("size")->defaultValue, 32u);
  EXPECT_EQ(opForm(OpKind::BufCreate).arg("bytes")->defaultValue, 256u);
  EXPECT_EQ(opForm(OpKind::Sync).arg("seed"), nullptr);
  EXPECT_EQ(opForm(OpKind::Create).arg("seed"), nullptr);
}

TEST(Operation, ArgumentsWriteTheirOwnFieldAtFullWidth) {
  for (const OpForm& f : opForms()) {
    for (const ArgSpec& a : f.args) {
      Operation op;
      a.set(op, a.max);
      EXPECT_EQ(a.get(op), a.max) << f.name << " " << a.key;
      for (const ArgSpec& other : f.args) {
        if (&other != &a) {
          EXPECT_EQ(other.get(op), other.defaultValue) << f.name << " " << a.key;
        }
      }
    }
  }
}

TEST(Operation, TextLeavesOutDefaultArguments) {
  EXPECT_EQ(operationText({.kind = OpKind::Draw, .names = {"r0"}, .triangles = 9, .seed = 3}),
            "draw r0 triangles=9 seed=3");
  EXPECT_EQ(operationText({.kind = OpKind::Draw, .names = {"r0"}}), "draw r0");
  EXPECT_EQ(operationText({.kind = OpKind::Draw, .names = {"r0"}, .seed = 7}), "draw r0 seed=7");
  EXPECT_EQ(operationText({.kind = OpKind::Create, .names = {"r1"}, .height = 2}),
            "create r1 height=2");
  EXPECT_EQ(operationText({.kind = OpKind::SetTextures, .names = {"r0"}, .count = 0}),
            "set_textures r0 count=0");
  EXPECT_EQ(operationText({.kind = OpKind::BufCreate, .names = {"c0", "b0"}, .bytes = 1ULL << 31}),
            "buf_create c0 b0 bytes=2147483648");
  EXPECT_EQ(operationText({.kind = OpKind::CtxDestroy, .names = {"c0"}}), "ctx_destroy c0");
}

TEST(Operation, EqualityIgnoresTheSourceLine) {
  const Operation a{.kind = OpKind::Sync, .names = {"r0"}, .line = 3};
  Operation b = a;
  b.line = 9;
  EXPECT_EQ(a, b);
  b.names = {"r1"};
  EXPECT_FALSE(a == b);
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
