// SequencePropertyTest.cpp: properties over random valid sequences, built by walking the
// reference model: text round trips, renumbering, and errors placed at the offending line.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "base/InputError.h"
#include "model/Sequence.h"
#include "model/renderer/ReferenceModel.h"
#include "tests/TestOps.h"
#include "tests/model/Printers.h"

namespace gpufuzz {
namespace {

using testing::testOp;

std::string genName() {
  static constexpr std::string_view kTail = "abcdefghijklmnopqrstuvwxyz0123456789_";
  std::string name(1, *rc::gen::inRange('a', static_cast<char>('z' + 1)));
  const size_t length = *rc::gen::inRange<size_t>(1, kMaxNameLength + 1);
  while (name.size() < length) {
    name += kTail[*rc::gen::inRange<size_t>(0, kTail.size())];
  }
  return name;
}

/// Free text as a directive value keeps it: printable, no surrounding blanks, not empty.
std::string genText() {
  std::string text = *rc::gen::container<std::string>(rc::gen::inRange<char>(' ', '~' + 1));
  const size_t begin = text.find_first_not_of(' ');
  if (begin == std::string::npos) return "x";
  return text.substr(begin, text.find_last_not_of(' ') - begin + 1);
}

uint64_t genArg(const ArgDecl& a) {
  // Images stay small: the model renders every draw on the host.
  if (a.key == "width" || a.key == "height") return *rc::gen::inRange<uint64_t>(a.min, 48);
  return *rc::gen::oneOf(rc::gen::element(a.min, a.max, a.defaultValue),
                         rc::gen::inRange<uint64_t>(a.min, a.max + 1));
}

std::optional<std::string> genLiveName(const ModelState& state, std::size_t kind) {
  const std::vector<std::size_t>& live = state.alive(kind);
  if (live.empty()) return std::nullopt;
  return state.names()[*rc::gen::elementOf(live)].name;
}

std::optional<Expectation> genExpectation(size_t opCount) {
  if (!*rc::gen::arbitrary<bool>()) return std::nullopt;
  const auto cls = static_cast<OutcomeClass>(*rc::gen::inRange<std::size_t>(0, kOutcomeClassCount));
  Expectation e{cls, std::nullopt};
  if (cls != OutcomeClass::Pass && cls != OutcomeClass::Leak && *rc::gen::arbitrary<bool>()) {
    e.at = At{opCount == 0 ? At::kEnd : *rc::gen::inRange<uint32_t>(0, uint32_t(opCount) + 1)};
  }
  return e;
}

template <typename T>
std::optional<T> maybe(T value) {
  return *rc::gen::arbitrary<bool>() ? std::optional<T>(std::move(value)) : std::nullopt;
}

rc::Gen<Sequence> genSequence() {
  return rc::gen::exec([] {
    Sequence s;
    ReferenceModel model;
    const int steps = *rc::gen::inRange(0, 40);
    for (int i = 0; i < steps; ++i) {
      const LifecycleModel& all = builtinModel("all");
      const OpDecl& form = all.ops[*rc::gen::inRange<size_t>(0, all.ops.size())];
      Operation op = testOp(all, form.name);
      for (const SlotDecl& slot : form.slots) {
        std::optional<std::string> name =
            slot.use == SlotUse::Introduce ? genName() : genLiveName(model.state(), slot.kind);
        if (name) op.names.push_back(*name);
      }
      for (size_t a = 0; a < form.args.size(); ++a) {
        if (*rc::gen::arbitrary<bool>()) op.args[a] = genArg(form.args[a]);
      }
      // A random name may collide with a used one; the model decides, as a generator does.
      if (!model.precondition(op).empty()) continue;
      model.apply(op);
      s.ops.push_back(std::move(op));
    }
    Directives& d = s.directives;
    d.backend = maybe(
        std::string(*rc::gen::element("sim", "cuda", "cuda-async", "opencl", "vulkan", "auto")));
    d.policy = maybe(std::string(
        *rc::gen::element("shipped", "context-first", "no-destroy-sync", "no-texture-wait")));
    d.faults = maybe(std::string(*rc::gen::element("none", "max-26.5.0", "plans/a-b.json")));
    d.model = maybe(std::string("all"));
    d.target = maybe(genText());
    d.expect = genExpectation(s.ops.size());
    for (std::string_view backend : kBackendNames) {
      if (auto e = genExpectation(s.ops.size())) d.expectOn[std::string(backend)] = *e;
    }
    d.seed = maybe(*rc::gen::arbitrary<uint64_t>());
    d.found = maybe(genText());
    const int notes = *rc::gen::inRange(0, 3);
    for (int i = 0; i < notes; ++i) {
      d.notes.push_back(genText());
    }
    return s;
  });
}

RC_GTEST_PROP(SequenceProperty, PrintThenParseGivesTheSameSequence, ()) {
  const Sequence s = *genSequence();
  const Sequence back = parseSequence(printSequence(s), "p.seq");
  RC_ASSERT(back.ops == s.ops);
  RC_ASSERT(back.directives == s.directives);
  RC_ASSERT(printSequence(back) == printSequence(s));
  for (size_t i = 0; i < back.ops.size(); ++i) {
    RC_ASSERT(back.ops[i].line > 0);
  }
}

RC_GTEST_PROP(SequenceProperty, RenumberedSequencesStayValidAndNormalizeAlike, ()) {
  const Sequence s = *genSequence();
  const Sequence r = renumbered(s);
  validateSequence(r, "p.seq");
  RC_ASSERT(renumbered(r).ops == r.ops);
  RC_ASSERT(normalizedOperations(r) == normalizedOperations(s));
  RC_ASSERT(parseSequence(normalizedOperations(s), "p.seq").ops == r.ops);
  // Renumbering renames only: each renderer draws the same image under its new name.
  ReferenceModel original, renamed;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    original.apply(s.ops[i]);
    renamed.apply(r.ops[i]);
    if (rendererOp(s.ops[i]) < RendererOp::Destroy) {
      RC_ASSERT(original.expectedImage(s.ops[i].names[0]) ==
                renamed.expectedImage(r.ops[i].names[0]));
    }
  }
}

RC_GTEST_PROP(SequenceProperty, ReusingAnyUsedNameFailsAtThatLine, ()) {
  Sequence s = *genSequence();
  RC_PRE(!s.ops.empty());
  const Operation& target = *rc::gen::elementOf(s.ops);
  const std::string name = *rc::gen::elementOf(target.names);
  const std::string text = printSequence(s) + "ctx_create " + name + "\n";
  const int lastLine = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  try {
    parseSequence(text, "p.seq");
    RC_FAIL("parsed a reused name");
  } catch (const InputError& e) {
    RC_ASSERT(e.line() == lastLine);
    RC_ASSERT(e.column() == 12);
    RC_ASSERT(e.message() ==
              "name " + name + " was already used: a name is introduced once, never reused");
  }
}

}  // namespace
}  // namespace gpufuzz
