// GenerationBench.cpp: gpufuzz-bench-generation, what generating a sequence costs, by model.
//
// - Generate/<model>/max_ops:M: the time of one generateSequence() of the built-in models and of
// `wide`, a model
//   of 40 operations over 8 kinds written here (owners, flags, a list slot, integer and word
//   arguments). The goal: under 50 us a sequence of up to 40 operations for `wide`.
// - Validate/<model>: isValid() of the generated sequences (what every shrink candidate pays).
// - Mutate/<model>: one mutant of a generated sequence of up to 40 operations (guided search,
//   docs/search.md). The goal: under 50 us.
//
//   gpufuzz-bench-generation [google benchmark flags]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "model/Generator.h"
#include "model/Mutations.h"
#include "model/SequenceEdits.h"

namespace {

using namespace gpufuzz;

/// 8 kinds in an owner chain of two levels, 5 operations each: 40 operations.
std::string wideModelText() {
  std::string text =
      "# gpufuzz model\nmodel wide\nnote 40 operations for the generation benchmark\n";
  const char* kinds[] = {"device", "queue", "pool", "buffer", "image", "fence", "list", "event"};
  const char* owners[] = {"", "device", "device", "pool", "pool", "queue", "queue", "device"};
  for (int k = 0; k < 8; ++k) {
    text += "resource " + std::string(kinds[k]) + " prefix " + std::string(kinds[k]).substr(0, 2);
    if (*owners[k]) text += " owner " + std::string(owners[k]);
    text += "\n";
  }
  for (int k = 0; k < 8; ++k) {
    const std::string kind = kinds[k];
    const std::string owner = owners[k];
    const std::string make = owner.empty() ? "" : owner + " ";
    text += "op " + kind + "_create " + make + "-> " + kind + " size=64 (1..65536) weight:6\n";
    text += "op " + kind + "_use " + kind + (k > 0 ? " " + std::string(kinds[k - 1]) : "") +
            " mode=fast {fast|slow|lazy} weight:10 +busy(" + kind + ")\n";
    text += "op " + kind + "_wait " + kind + " event* weight:4 -busy(" + kind + ")\n";
    text += "op " + kind + "_reset " + kind + " count=1 (0..16) weight:3 -busy(" + kind + ")\n";
    text += "op " + kind + "_destroy " + kind + "! weight:5\n";
  }
  text += "release event fence list image buffer pool queue device\n";
  return text;
}

const LifecycleModel& model(int which) {
  static const LifecycleModel& wide = internModel(parseModel(wideModelText(), "wide.model"));
  switch (which) {
    case 0:
      return builtinModel("renderer");
    case 1:
      return builtinModel("all");
    default:
      return wide;
  }
}

const char* modelName(int which) {
  return which == 0 ? "renderer" : which == 1 ? "all" : "wide";
}

void generate(benchmark::State& state) {
  const GeneratorConfig config{&model(static_cast<int>(state.range(0))),
                               static_cast<uint32_t>(state.range(1))};
  uint64_t seed = 1;
  uint64_t ops = 0;
  for (auto _ : state) {
    const Sequence seq = generateSequence(config, seed++);
    ops += seq.ops.size();
    benchmark::DoNotOptimize(seq.ops.data());
  }
  state.SetLabel(modelName(static_cast<int>(state.range(0))));
  state.counters["ops_per_sequence"] =
      static_cast<double>(ops) / static_cast<double>(state.iterations());
}
BENCHMARK(generate)
    ->Name("Generate")
    ->ArgNames({"model", "max_ops"})
    ->Args({0, 40})
    ->Args({1, 40})
    ->Args({2, 40})
    ->Unit(benchmark::kMicrosecond);

/// The sequences of seeds 0..255: what the validation and mutation cases take in turn.
std::vector<Sequence> generated(const GeneratorConfig& config) {
  std::vector<Sequence> seqs;
  for (uint64_t i = 0; i < 256; ++i)
    seqs.push_back(generateSequence(config, i));
  return seqs;
}

void validate(benchmark::State& state) {
  const GeneratorConfig config{&model(static_cast<int>(state.range(0))), 40};
  const std::vector<Sequence> seqs = generated(config);
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(isValid(seqs[i++ % seqs.size()]));
  }
  state.SetLabel(modelName(static_cast<int>(state.range(0))));
}
BENCHMARK(validate)
    ->Name("Validate")
    ->ArgNames({"model"})
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond);

void mutateOne(benchmark::State& state) {
  const GeneratorConfig config{&model(static_cast<int>(state.range(0))), 40};
  const std::vector<Sequence> parents = generated(config);
  uint64_t seed = 1;
  for (auto _ : state) {
    const Sequence& parent = parents[seed % parents.size()];
    const Sequence& donor = parents[(seed * 7) % parents.size()];
    const Sequence child = mutate(parent, donor, config, seed++);
    benchmark::DoNotOptimize(child.ops.data());
  }
  state.SetLabel(modelName(static_cast<int>(state.range(0))));
}
BENCHMARK(mutateOne)->Name("Mutate")->ArgNames({"model"})->Arg(0)->Arg(1)->Arg(2)->Unit(
    benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
