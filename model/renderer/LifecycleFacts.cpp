// LifecycleFacts.cpp: a replay of a sequence through the renderer's lifecycle under a teardown
// policy, step by step, in the renderer's terms.
#include "model/renderer/LifecycleFacts.h"

#include <iterator>
#include <map>

#include "model/ModelFacts.h"
#include "model/Text.h"
#include "model/renderer/ReferenceModel.h"

namespace gpufuzz {

namespace {

std::string ordinalWord(uint32_t index) {
  static constexpr const char* kWords[] = {"first", "second",  "third",  "fourth", "fifth",
                                           "sixth", "seventh", "eighth", "ninth",  "tenth"};
  if (index < std::size(kWords)) return kWords[index];
  const uint32_t n = index + 1;
  const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                       : n % 10 == 1                    ? "st"
                       : n % 10 == 2                    ? "nd"
                       : n % 10 == 3                    ? "rd"
                                                        : "th";
  return std::to_string(n) + suffix;
}

/// "the draw at 2 and the set_textures at 4": the work queued since a renderer's last wait.
std::string queuedText(const Sequence& seq, const std::vector<std::size_t>& queued) {
  std::vector<std::string> parts;
  for (std::size_t i : queued) {
    parts.push_back("the " + std::string(seq.ops[i].name()) + " at " + std::to_string(i + 1));
  }
  return joined(parts, " and ");
}

/// The facts of a sequence of a model without the renderer's semantics, in its model's terms.
std::vector<StepFacts> modelStepFacts(const Sequence& seq) {
  std::vector<StepFacts> out;
  for (ModelStep& step : modelFacts(seq))
    out.push_back({StepRole::Other, std::move(step.text), std::nullopt, std::move(step.role)});
  return out;
}

}  // namespace

std::string contextText(uint32_t index) {
  return "context #" + std::to_string(index) + " (the " + ordinalWord(index) + " context)";
}

std::string roleKey(const StepFacts& f) {
  return f.modelRole.empty() ? std::string(stepRoleName(f.role)) : f.modelRole;
}

namespace {

/// Each role's words, in the order of StepRole.
struct RoleWords {
  StepRole role;
  std::string_view name, heading;
};
constexpr RoleWords kRoleWords[] = {
    {StepRole::IntroducesContext, "introduces-context", "introduce a context"},
    {StepRole::Allocates, "allocates", "allocate a buffer"},
    {StepRole::QueuesWork, "queues-work", "queue work (a draw or a texture upload)"},
    {StepRole::Waits, "waits", "wait for a queue"},
    {StepRole::ReplacesTextures, "replaces-textures", "replace textures"},
    {StepRole::DestroysWithPending, "destroys-with-pending",
     "destroy a context while work queued on it is pending"},
    {StepRole::DestroysWithLiveBuffers, "destroys-with-live-buffers",
     "destroy a context while its buffers live"},
    {StepRole::Destroys, "destroys", "destroy a renderer or a context"},
    {StepRole::FreesBuffer, "frees-buffer", "free a buffer"},
    {StepRole::Other, "other", "other steps"},
};

constexpr bool inRoleOrder() {
  for (std::size_t i = 0; i < std::size(kRoleWords); ++i) {
    if (static_cast<std::size_t>(kRoleWords[i].role) != i) return false;
  }
  return std::size(kRoleWords) == static_cast<std::size_t>(StepRole::Other) + 1;
}
static_assert(inRoleOrder(), "kRoleWords has one row a StepRole, in its order");

const RoleWords& wordsOf(StepRole role) {
  return kRoleWords[static_cast<std::size_t>(role)];
}

}  // namespace

std::string_view stepRoleName(StepRole role) {
  return wordsOf(role).name;
}

std::string_view stepRoleHeading(StepRole role) {
  return wordsOf(role).heading;
}

namespace {

/// A renderer as lifecycleFacts follows it.
struct RendererLife {
  uint32_t context = 0;
  std::vector<std::size_t> queued;  // operations enqueued since the last wait
  uint32_t textures = 0;
};

/// A bare context as lifecycleFacts follows it.
struct ContextLife {
  uint32_t context = 0;
  uint32_t liveBuffers = 0, allocations = 0;
  bool alive = true;
};

/// What step `i` of `seq`, a set_textures of `count` textures on renderer `r`, establishes.
StepFacts setTexturesFacts(const Sequence& seq, std::size_t i, uint32_t count, RendererLife& r,
                           const Defenses& defenses, const std::string& policyText) {
  const std::string& name = seq.ops[i].names.at(0);
  StepFacts f;
  f.context = r.context;
  std::vector<std::string> parts;
  if (r.textures > 0) {
    f.role = StepRole::ReplacesTextures;
    std::string text = "replaces " + name + "'s " + plural(r.textures, "texture");
    if (!r.queued.empty()) {
      text += defenses.textureReplaceWaits
                  ? ", after waiting for " + queuedText(seq, r.queued)
                  : " while " + queuedText(seq, r.queued) + " still reads them (" + policyText +
                        " does not wait)";
    }
    parts.push_back(text);
  } else if (!r.queued.empty() && defenses.textureReplaceWaits) {
    f.role = count > 0 ? StepRole::QueuesWork : StepRole::Waits;
    parts.push_back("waits for " + queuedText(seq, r.queued));
  } else {
    f.role = count > 0 ? StepRole::QueuesWork : StepRole::Other;
  }
  if (count > 0) {
    parts.push_back("queues the upload of " + plural(count, "texture") + " on " + name +
                    " (context #" + std::to_string(r.context) + ")");
  } else if (parts.empty()) {
    parts.push_back("sets no textures on " + name);
  }
  f.establishes = joined(parts, ", then ");
  if (defenses.textureReplaceWaits) r.queued.clear();
  if (count > 0) r.queued.push_back(i);
  r.textures = count;
  return f;
}

/// What a destroy of renderer `name`, `r`, establishes under `defenses`.
StepFacts destroyFacts(const Sequence& seq, const std::string& name, const RendererLife& r,
                       const Defenses& defenses, const std::string& policyText) {
  StepFacts f;
  const std::string ctx = "context #" + std::to_string(r.context);
  const bool pendingAtRelease = !r.queued.empty() && !defenses.destroyWaits;
  f.context = r.context;
  if (pendingAtRelease) {
    f.role = StepRole::DestroysWithPending;
    f.establishes = "destroys " + name + " without waiting for " + queuedText(seq, r.queued) +
                    " (" + policyText + "): " + ctx + " is destroyed with work pending";
  } else if (!defenses.buffersBeforeContext) {
    f.role = StepRole::DestroysWithLiveBuffers;
    f.establishes = "destroys " + name + ", releasing " + ctx + " before its buffers (" +
                    policyText + "): the context goes while its buffers live";
  } else {
    f.role = StepRole::Destroys;
    f.establishes = "destroys " + name + " (" + ctx + ")";
    if (!r.queued.empty()) f.establishes += ", waiting first for " + queuedText(seq, r.queued);
  }
  if (pendingAtRelease && !defenses.buffersBeforeContext) {
    f.establishes += ", and before its buffers";
  }
  return f;
}

/// What a ctx_destroy of bare context `name`, `c`, establishes.
StepFacts ctxDestroyFacts(const std::string& name, ContextLife& c) {
  StepFacts f;
  c.alive = false;
  f.context = c.context;
  if (c.liveBuffers > 0) {
    f.role = StepRole::DestroysWithLiveBuffers;
    f.establishes = "destroys bare context " + name + " (#" + std::to_string(c.context) +
                    ") while its " + plural(c.liveBuffers, "buffer") +
                    (c.liveBuffers == 1 ? " lives" : " live") + ": orphaned, they keep it alive";
  } else {
    f = {StepRole::Destroys,
         "destroys bare context " + name + " (#" + std::to_string(c.context) + ")", c.context};
  }
  return f;
}

/// What a buf_destroy of buffer `name` of context `owner`, `c`, establishes.
StepFacts bufDestroyFacts(const std::string& name, const std::string& owner, ContextLife& c) {
  StepFacts f;
  --c.liveBuffers;
  f = {StepRole::FreesBuffer, "frees buffer " + name, c.context};
  if (c.alive) {
    f.establishes += " of " + owner + " (context #" + std::to_string(c.context) + ")";
  } else {
    f.establishes += ", orphaned since " + owner + " (context #" + std::to_string(c.context) +
                     ") was destroyed" +
                     (c.liveBuffers == 0 ? ": the context's memory goes with it" : "");
  }
  return f;
}

}  // namespace

std::vector<StepFacts> lifecycleFacts(const Sequence& seq, TeardownPolicy policy) {
  if (!hasRendererSemantics(seq.lifecycle())) return modelStepFacts(seq);
  const Defenses defenses = defensesOf(policy);
  const std::string policyText = "policy " + std::string(policyName(policy));
  std::map<std::string, RendererLife> renderers;
  // Bare contexts stay known after their destroy: their orphaned buffers may still be freed.
  std::map<std::string, ContextLife> contexts;
  std::map<std::string, std::string> buffers;  // live bare buffer -> its context's name
  uint32_t created = 0;  // each renderer makes one device context, as each ctx_create does

  std::vector<StepFacts> facts;
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    const Operation& op = seq.ops[i];
    const std::string& name = op.names.at(0);
    const uint32_t count =
        rendererOp(op) == RendererOp::SetTextures ? static_cast<uint32_t>(op.arg("count")) : 0;
    StepFacts f;
    switch (rendererOp(op)) {
      case RendererOp::Create:
        renderers[name] = RendererLife{created, {}, 0};
        f = {StepRole::IntroducesContext,
             "introduces renderer " + name + ": " + contextText(created), created};
        ++created;
        break;
      case RendererOp::CtxCreate:
        contexts[name] = ContextLife{created, 0, 0, true};
        f = {StepRole::IntroducesContext,
             "introduces bare context " + name + ": " + contextText(created), created};
        ++created;
        break;
      case RendererOp::BufCreate: {
        ContextLife& c = contexts.at(name);
        f = {StepRole::Allocates,
             "allocates buffer " + op.names.at(1) + " in " + name + " (context #" +
                 std::to_string(c.context) + ")" +
                 (c.allocations == 0 ? ", the context's first allocation" : ""),
             c.context};
        ++c.allocations;
        ++c.liveBuffers;
        buffers[op.names.at(1)] = name;
        break;
      }
      case RendererOp::Draw: {
        RendererLife& r = renderers.at(name);
        f = {StepRole::QueuesWork,
             "queues a draw on " + name + " (context #" + std::to_string(r.context) +
                 "), pending until " + name + " next waits",
             r.context};
        r.queued.push_back(i);
        break;
      }
      case RendererOp::SetTextures:
        f = setTexturesFacts(seq, i, count, renderers.at(name), defenses, policyText);
        break;
      case RendererOp::Sync:
      case RendererOp::ReadBack: {
        RendererLife& r = renderers.at(name);
        f = {StepRole::Waits,
             std::string(rendererOp(op) == RendererOp::Sync ? "waits for " : "reads back ") + name +
                 (rendererOp(op) == RendererOp::Sync ? "'s queue"
                                                     : "'s framebuffer, waiting for its queue") +
                 (r.queued.empty() ? " (nothing queued)" : " (" + queuedText(seq, r.queued) + ")"),
             r.context};
        r.queued.clear();
        break;
      }
      case RendererOp::Destroy:
        f = destroyFacts(seq, name, renderers.at(name), defenses, policyText);
        renderers.erase(name);
        break;
      case RendererOp::CtxDestroy:
        f = ctxDestroyFacts(name, contexts.at(name));
        break;
      case RendererOp::BufDestroy: {
        const std::string owner = buffers.at(name);
        buffers.erase(name);
        f = bufDestroyFacts(name, owner, contexts.at(owner));
        break;
      }
      case RendererOp::Other:
        break;
    }
    facts.push_back(std::move(f));
  }
  return facts;
}

}  // namespace gpufuzz
