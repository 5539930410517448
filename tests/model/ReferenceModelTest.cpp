// ReferenceModelTest.cpp: preconditions, next state and expected images of the reference model.
#include "model/renderer/ReferenceModel.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <stdexcept>

#include "renderer/Raster.h"
#include "tests/TestOps.h"
#include "tests/model/Printers.h"

namespace gpufuzz {
namespace {

using testing::testOp;

Operation op(std::string_view name, std::vector<std::string> names) {
  return testOp(name, std::move(names));
}
Operation create(std::string r, uint64_t width = 64, uint64_t height = 64) {
  return testOp("create", {std::move(r)}, {{"width", width}, {"height", height}});
}
Operation draw(std::string r, uint64_t triangles = 4, uint64_t seed = 0) {
  return testOp("draw", {std::move(r)}, {{"triangles", triangles}, {"seed", seed}});
}
Operation setTextures(std::string r, uint64_t count, uint64_t size, uint64_t seed) {
  return testOp("set_textures", {std::move(r)}, {{"count", count}, {"size", size}, {"seed", seed}});
}

ReferenceModel modelAfter(const std::vector<Operation>& ops) {
  ReferenceModel model;
  for (const Operation& o : ops) {
    model.apply(o);
  }
  return model;
}

struct PreconditionCase {
  std::vector<Operation> before;
  Operation op;
  std::string reason;  // expected prefix of the reason; empty: the operation may run
  int nameIndex = -1;
};

TEST(ReferenceModel, PreconditionsNameWhatIsWrong) {
  const std::vector<PreconditionCase> cases = {
      {{}, draw("r0"), "r0 is not alive: nothing created it", 0},
      {{create("r0"), op("destroy", {"r0"})}, draw("r0"), "r0 is not alive: it was destroyed", 0},
      {{create("r0"), op("destroy", {"r0"})}, create("r0"), "name r0 was already used", 0},
      {{create("r0")}, op("ctx_create", {"r0"}), "name r0 was already used", 0},
      {{op("ctx_create", {"c0"})}, draw("c0"), "c0 is a context, draw needs a renderer", 0},
      {{op("ctx_create", {"c0"})},
       op("read_back", {"c0"}),
       "c0 is a context, read_back needs a renderer",
       0},
      {{create("r0")},
       op("buf_create", {"r0", "b0"}),
       "r0 is a renderer, buf_create needs a context",
       0},
      {{op("ctx_create", {"c0"})},
       op("buf_create", {"c0", "c0"}),
       "name c0 is given twice: the names of one operation are distinct",
       1},
      {{op("ctx_create", {"c0"}), op("buf_create", {"c0", "b0"})},
       op("buf_destroy", {"c0"}),
       "c0 is a context, buf_destroy needs a buffer",
       0},
      {{op("ctx_create", {"c0"}), op("buf_create", {"c0", "b0"})},
       op("ctx_destroy", {"b0"}),
       "b0 is a buffer, ctx_destroy needs a context",
       0},
      {{op("ctx_create", {"c0"}), op("ctx_destroy", {"c0"})},
       op("buf_create", {"c0", "b0"}),
       "c0 is not alive: it was destroyed",
       0},
      {{op("ctx_create", {"c0"}), op("ctx_destroy", {"c0"})},
       op("ctx_destroy", {"c0"}),
       "c0 is not alive: it was destroyed",
       0},
      {{op("ctx_create", {"c0"}), op("buf_create", {"c0", "b0"}), op("buf_destroy", {"b0"})},
       op("buf_destroy", {"b0"}),
       "b0 is not alive: it was destroyed",
       0},
      {{}, op("draw", {}), "draw takes 1 name, got 0: draw R [triangles=1..1024]"},
      {{op("ctx_create", {"c0"})}, op("buf_create", {"c0"}), "buf_create takes 2 names, got 1"},
      {{}, create("R0"), "bad name 'R0'", 0},
      {{}, create("r0", 0), "width=0 is out of bounds: width takes 1..4096"},
      {{}, create("r0", 64, 4097), "height=4097 is out of bounds: height takes 1..4096"},
      {{create("r0")},
       draw("r0", 1025),
       "triangles=1025 is out of bounds: triangles takes 1..1024"},
      {{create("r0")}, draw("r0", 0), "triangles=0 is out of bounds"},
      {{create("r0")},
       setTextures("r0", 17, 32, 0),
       "count=17 is out of bounds: count takes 0..16"},
      {{create("r0")}, setTextures("r0", 1, 0, 0), "size=0 is out of bounds: size takes 1..2048"},
      {{create("r0")}, setTextures("r0", 1, 2049, 0), "size=2049 is out of bounds"},
      {{op("ctx_create", {"c0"})},
       testOp("buf_create", {"c0", "b0"}, {{"bytes", (1ULL << 31) + 1}}),
       "bytes=2147483649 is out of bounds: bytes takes 1..2147483648"},
      {{op("ctx_create", {"c0"})},
       testOp("buf_create", {"c0", "b0"}, {{"bytes", 0}}),
       "bytes=0 is out of bounds"},
      // What may run, including the bounds themselves.
      {{}, create("r0", 4096, 1), ""},
      {{create("r0")}, draw("r0", 1024, 4294967295u), ""},
      {{create("r0")}, setTextures("r0", 0, 2048, 4294967295u), ""},
      {{create("r0")}, setTextures("r0", 16, 1, 0), ""},
      {{op("ctx_create", {"c0"})}, testOp("buf_create", {"c0", "b0"}, {{"bytes", 1ULL << 31}}), ""},
      // A context may go while its buffers live, and the orphaned buffer may still be freed.
      {{op("ctx_create", {"c0"}), op("buf_create", {"c0", "b0"})}, op("ctx_destroy", {"c0"}), ""},
      {{op("ctx_create", {"c0"}), op("buf_create", {"c0", "b0"}), op("ctx_destroy", {"c0"})},
       op("buf_destroy", {"b0"}),
       ""},
  };
  for (const PreconditionCase& c : cases) {
    SCOPED_TRACE(operationText(c.op));
    const ReferenceModel model = modelAfter(c.before);
    const ReferenceModel::Verdict v = model.check(c.op);
    EXPECT_EQ(v.reason.substr(0, c.reason.size()), c.reason) << v.reason;
    EXPECT_EQ(v.ok(), c.reason.empty());
    EXPECT_EQ(model.precondition(c.op), v.reason);
    if (!c.reason.empty()) {
      EXPECT_EQ(v.nameIndex, c.nameIndex);
    }
  }
}

TEST(ReferenceModel, TracksWhatIsAliveAndEveryNameEverUsed) {
  ReferenceModel model;
  model.apply(create("r0", 3, 2));
  model.apply(op("ctx_create", {"c0"}));
  model.apply(op("buf_create", {"c0", "b0"}));
  model.apply(op("buf_create", {"c0", "b1"}));
  EXPECT_EQ(model.renderers().size(), 1u);
  EXPECT_EQ(model.contexts(), (std::set<std::string>{"c0"}));
  EXPECT_EQ(model.buffers(), (std::map<std::string, std::string>{{"b0", "c0"}, {"b1", "c0"}}));

  model.apply(op("ctx_destroy", {"c0"}));
  EXPECT_TRUE(model.contexts().empty());
  EXPECT_EQ(model.buffers().size(), 2u) << "buffers outlive their context's handle";
  model.apply(op("buf_destroy", {"b0"}));
  model.apply(op("destroy", {"r0"}));
  EXPECT_TRUE(model.renderers().empty());
  EXPECT_EQ(model.buffers(), (std::map<std::string, std::string>{{"b1", "c0"}}));

  for (const char* used : {"r0", "c0", "b0", "b1"}) {
    EXPECT_TRUE(model.nameUsed(used)) << used;
  }
  EXPECT_FALSE(model.nameUsed("r1"));
  EXPECT_EQ(model.nameKind("r0"), "renderer");
  EXPECT_EQ(model.nameKind("c0"), "context");
  EXPECT_EQ(model.nameKind("b1"), "buffer");
  EXPECT_EQ(model.nameKind("x"), std::nullopt);
}

// Which name a buffer belongs to is the model's `owner`: the context slot of its buf_create.
TEST(ReferenceModel, BuffersKnowTheirContextThroughTheModelsOwner) {
  ReferenceModel model;
  model.apply(op("ctx_create", {"c0"}));
  model.apply(op("ctx_create", {"c1"}));
  model.apply(op("buf_create", {"c1", "b0"}));
  model.apply(op("buf_create", {"c0", "b1"}));
  EXPECT_EQ(model.buffers(), (std::map<std::string, std::string>{{"b0", "c1"}, {"b1", "c0"}}));
  EXPECT_EQ(model.alive("context"), (std::set<std::string>{"c0", "c1"}));
  EXPECT_EQ(model.alive("buffer"), (std::set<std::string>{"b0", "b1"}));
  EXPECT_TRUE(model.alive("stream").empty()) << "a kind the model lacks has no names";
  const ModelState& state = model.state();
  ASSERT_NE(state.find("c1"), nullptr);
  EXPECT_EQ(state.aliveOwnedBy(static_cast<size_t>(state.find("c1") - state.names().data())), 1u);
}

TEST(ReferenceModel, OfTheRendererModelHasNoContextsAndRefusesDeviceOperations) {
  const LifecycleModel& renderer = builtinModel("renderer");
  ReferenceModel model(renderer);
  model.apply(testOp(renderer, "create", {"r0"}, {{"width", 2}, {"height", 2}}));
  EXPECT_EQ(model.renderers().size(), 1u);
  EXPECT_TRUE(model.contexts().empty());
  EXPECT_TRUE(model.buffers().empty());
  const ReferenceModel::Verdict v = model.check(op("ctx_create", {"c0"}));
  EXPECT_FALSE(v.ok());
  EXPECT_NE(v.reason.find("not in model renderer"), std::string::npos) << v.reason;
  EXPECT_THROW(model.apply(op("ctx_create", {"c0"})), std::invalid_argument);
  EXPECT_EQ(model.expectedImage("r0"), std::vector<uint32_t>(4, 0));
}

TEST(ReferenceModel, RendererOpNamesTheBuiltInOperationsAndNothingElse) {
  const LifecycleModel& all = builtinModel("all");
  for (size_t i = 0; i < all.ops.size(); ++i) {
    EXPECT_EQ(rendererOp(testOp(all, all.ops[i].name)), static_cast<RendererOp>(i))
        << all.ops[i].name;
  }
  EXPECT_EQ(rendererOp(testOp(builtinModel("device"), "buf_destroy", {"b0"})),
            RendererOp::BufDestroy);
  const LifecycleModel& other = internModel(parseModel(
      "model other\nresource stream\nop open -> stream\nop close stream!\nrelease stream\n",
      "other.model"));
  EXPECT_EQ(rendererOp(testOp(other, "open", {"s0"})), RendererOp::Other);

  EXPECT_TRUE(hasRendererSemantics(all));
  EXPECT_TRUE(hasRendererSemantics(builtinModel("renderer")));
  EXPECT_TRUE(hasRendererSemantics(builtinModel("device")));
  EXPECT_FALSE(hasRendererSemantics(other));
  // A subset of `all`'s operations, declared alike, is the renderer's; the same name declared
  // otherwise (other bounds) is not.
  const LifecycleModel& subset = internModel(parseModel(
      "model subset\nresource renderer prefix r\n"
      "op create -> renderer width=64 (1..4096) height=64 (1..4096)\nop destroy renderer!\n"
      "release renderer\n",
      "subset.model"));
  EXPECT_TRUE(hasRendererSemantics(subset));
  const LifecycleModel& wider = internModel(parseModel(
      "model wider\nresource renderer prefix r\n"
      "op create -> renderer width=64 (1..8192) height=64 (1..4096)\nop destroy renderer!\n"
      "release renderer\n",
      "wider.model"));
  EXPECT_FALSE(hasRendererSemantics(wider));
}

TEST(ReferenceModel, ApplyRefusesAnOperationThatMayNotRunAndChangesNothing) {
  ReferenceModel model;
  model.apply(create("r0"));
  EXPECT_THROW(model.apply(create("r0")), std::invalid_argument);
  EXPECT_THROW(model.apply(draw("r1")), std::invalid_argument);
  EXPECT_THROW(model.apply(op("buf_create", {"r0", "b0"})), std::invalid_argument);
  EXPECT_FALSE(model.nameUsed("b0")) << "a refused buf_create must not take its buffer's name";
  EXPECT_EQ(model.renderers().size(), 1u);
}

TEST(ReferenceModel, CreateStartsWithAZeroImageAndNoTextures) {
  ReferenceModel model;
  model.apply(create("r0", 5, 3));
  const ReferenceModel::Renderer& r = model.renderers().at("r0");
  EXPECT_EQ(r.width, 5u);
  EXPECT_EQ(r.height, 3u);
  EXPECT_EQ(r.textureCount, 0u);
  EXPECT_EQ(model.expectedImage("r0"), std::vector<uint32_t>(15, 0));
  EXPECT_THROW(model.expectedImage("r1"), std::out_of_range);
}

TEST(ReferenceModel, SetTexturesReplacesTheSet) {
  ReferenceModel model;
  model.apply(create("r0"));
  model.apply(setTextures("r0", 3, 8, 11));
  const ReferenceModel::Renderer& r = model.renderers().at("r0");
  EXPECT_EQ(r.textureCount, 3u);
  EXPECT_EQ(r.textureSize, 8u);
  EXPECT_EQ(r.textureSeed, 11u);
  model.apply(setTextures("r0", 0, 32, 0));
  EXPECT_EQ(model.renderers().at("r0").textureCount, 0u);
}

TEST(ReferenceModel, SyncAndReadBackChangeNothing) {
  ReferenceModel model = modelAfter({create("r0", 16, 16), draw("r0", 6, 2)});
  const std::vector<uint32_t> before = model.expectedImage("r0");
  model.apply(op("sync", {"r0"}));
  model.apply(op("read_back", {"r0"}));
  EXPECT_EQ(model.expectedImage("r0"), before);
}

std::vector<uint32_t> imageAfter(const std::vector<Operation>& ops) {
  return modelAfter(ops).expectedImage(ops.front().names.front());
}

TEST(ReferenceModelImage, ADrawPaintsPixelsDeterministically) {
  const std::vector<uint32_t> empty(64 * 64, 0);
  const std::vector<uint32_t> image = imageAfter({create("r0"), draw("r0", 4, 1)});
  EXPECT_NE(image, empty);
  EXPECT_EQ(image, imageAfter({create("r0"), draw("r0", 4, 1)}));
  // Every painted pixel is opaque: triangle colours carry alpha 0xff and texels none.
  for (uint32_t p : image) {
    EXPECT_TRUE(p == 0 || (p >> 24) == 0xff) << std::hex << p;
  }
}

TEST(ReferenceModelImage, DependsOnTheSeedTheTriangleCountAndTheTextures) {
  const std::vector<uint32_t> base = imageAfter({create("r0"), draw("r0", 4, 1)});
  EXPECT_NE(base, imageAfter({create("r0"), draw("r0", 4, 2)}));
  EXPECT_NE(base, imageAfter({create("r0"), draw("r0", 5, 1)}));
  const std::vector<uint32_t> textured =
      imageAfter({create("r0"), setTextures("r0", 2, 16, 5), draw("r0", 4, 1)});
  EXPECT_NE(base, textured);
  EXPECT_NE(textured, imageAfter({create("r0"), setTextures("r0", 2, 16, 6), draw("r0", 4, 1)}));
  EXPECT_NE(textured, imageAfter({create("r0"), setTextures("r0", 2, 8, 5), draw("r0", 4, 1)}));
  EXPECT_EQ(base, imageAfter({create("r0"), setTextures("r0", 2, 16, 5), setTextures("r0", 0, 1, 0),
                              draw("r0", 4, 1)}))
      << "count=0 means no textures";
}

TEST(ReferenceModelImage, RenderersAreIndependent) {
  ReferenceModel model = modelAfter({create("r0"), create("r1"), draw("r0", 4, 1)});
  EXPECT_EQ(model.expectedImage("r1"), std::vector<uint32_t>(64 * 64, 0));
}

// One covered pixel's value, from the rule in Raster.h's header: the last covering triangle's
// colour XOR the texel of texture (texture % count) at ((x + u) mod size, (y + v) mod size).
TEST(ReferenceModelImage, ACoveredPixelHoldsTheColourXorTheSampledTexel) {
  const uint32_t w = 40, h = 30, seed = 7, count = 3, size = 16, texSeed = 99;
  const std::vector<uint32_t> image = imageAfter(
      {create("r0", w, h), setTextures("r0", count, size, texSeed), draw("r0", 1, seed)});
  const raster::Triangle t = raster::makeTriangle(seed, 0, w, h);
  int covered = 0;
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) {
      const uint32_t pixel = image[y * w + x];
      if (!raster::covers(t, static_cast<int32_t>(x), static_cast<int32_t>(y))) {
        ASSERT_EQ(pixel, 0u) << x << "," << y;
        continue;
      }
      const uint32_t tx = (x + static_cast<uint32_t>(t.u)) % size;
      const uint32_t ty = (y + static_cast<uint32_t>(t.v)) % size;
      ASSERT_EQ(pixel, t.color ^ raster::texel(texSeed, t.texture % count, tx, ty))
          << x << "," << y;
      ++covered;
    }
  }
  EXPECT_GT(covered, 0) << "pick a seed whose first triangle covers a pixel";
}

// The whole image against a plain restatement of the rule, over previous content, with several
// triangles (later ones win), several textures and a non-square image (row-major layout).
TEST(ReferenceModelImage, MatchesAPlainRestatementOfTheRule) {
  const uint32_t w = 23, h = 11, count = 3, size = 5, texSeed = 4;
  ReferenceModel model =
      modelAfter({create("r0", w, h), draw("r0", 3, 8), setTextures("r0", count, size, texSeed)});
  std::vector<uint32_t> expected = model.expectedImage("r0");
  model.apply(draw("r0", 12, 21));
  for (uint32_t i = 0; i < 12; ++i) {
    const raster::Triangle t = raster::makeTriangle(21, i, w, h);
    for (uint32_t y = 0; y < h; ++y) {
      for (uint32_t x = 0; x < w; ++x) {
        if (!raster::covers(t, static_cast<int32_t>(x), static_cast<int32_t>(y))) continue;
        expected[y * w + x] = t.color ^ raster::texel(texSeed, t.texture % count,
                                                      (x + static_cast<uint32_t>(t.u)) % size,
                                                      (y + static_cast<uint32_t>(t.v)) % size);
      }
    }
  }
  EXPECT_EQ(model.expectedImage("r0"), expected);
}

// The host rasterizer (triangle by triangle over bounding boxes, incremental edges) leaves every
// pixel as the per-pixel rule of the kernel does: any triangles, clipped, degenerate or huge,
// either orientation, over any previous content, with and without textures.
RC_GTEST_PROP(RasterizeHost, AgreesWithThePerPixelRuleEverywhere, ()) {
  const uint32_t w = *rc::gen::inRange<uint32_t>(1, 40);
  const uint32_t h = *rc::gen::inRange<uint32_t>(1, 40);
  const uint32_t textureCount = *rc::gen::inRange<uint32_t>(0, 4);
  const uint32_t textureSize = *rc::gen::inRange<uint32_t>(1, 9);
  const uint32_t textureSeed = *rc::gen::arbitrary<uint32_t>();
  const auto coordinate = rc::gen::inRange<int32_t>(-60, 100);
  const auto triangles = *rc::gen::container<std::vector<raster::Triangle>>(rc::gen::apply(
      [](std::vector<int32_t> c, uint32_t color, uint32_t texture, uint32_t uv) {
        raster::Triangle t{};
        for (int k = 0; k < 3; ++k) {
          t.x[k] = c[static_cast<size_t>(2 * k)];
          t.y[k] = c[static_cast<size_t>(2 * k + 1)];
        }
        t.color = color;
        t.texture = texture;
        t.u = static_cast<int32_t>(uv & 0x7ff);
        t.v = static_cast<int32_t>((uv >> 11) & 0x7ff);
        return t;
      },
      rc::gen::container<std::vector<int32_t>>(6, coordinate), rc::gen::arbitrary<uint32_t>(),
      rc::gen::arbitrary<uint32_t>(), rc::gen::arbitrary<uint32_t>()));
  const auto previous =
      *rc::gen::container<std::vector<uint32_t>>(size_t{w} * h, rc::gen::arbitrary<uint32_t>());
  const auto sample = [textureSeed](uint32_t texture, uint32_t x, uint32_t y) {
    return raster::texel(textureSeed, texture, x, y);
  };
  const auto count = static_cast<uint32_t>(triangles.size());
  std::vector<uint32_t> fast = previous;
  raster::rasterizeHost(fast.data(), w, h, triangles.data(), count, textureCount, textureSize,
                        sample);
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) {
      const uint32_t expected =
          raster::shadePixel(previous[size_t{y} * w + x], triangles.data(), count, textureCount,
                             textureSize, sample, static_cast<int32_t>(x), static_cast<int32_t>(y));
      RC_ASSERT(fast[size_t{y} * w + x] == expected);
    }
  }
}

TEST(ReferenceModelImage, DrawIntoRejectsAnImageOfTheWrongSize) {
  std::vector<uint32_t> image(10, 0);
  EXPECT_THROW(drawInto(image, 4, 4, 1, 0, 0, 0, 0), std::invalid_argument);
  std::vector<uint32_t> square(16, 0);
  EXPECT_THROW(drawInto(square, 4, 4, 1, 0, 1, 0, 0), std::invalid_argument);
  EXPECT_NO_THROW(drawInto(square, 4, 4, 1, 0, 0, 0, 0));
}

}  // namespace
}  // namespace gpufuzz
