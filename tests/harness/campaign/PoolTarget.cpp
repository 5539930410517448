// PoolTarget.cpp: gpufuzz-pool-target, a target of the protocol (docs/target.md) whose one bug
// crashes in one function reached from three operations. Each context and each renderer keeps a
// pool: a buffer or a queued draw holds a block of it; buf_destroy and sync give blocks back.
// Releasing a pool that still has blocks out walks a block table already torn down, and dies of
// SIGSEGV in block_unlink, under pool_free_blocks and pool_release: from ctx_destroy (a context
// with a live buffer), destroy (a renderer with two draws queued: it keeps one block spare) or
// the end (its leftovers).
//
// --second-bug adds another crash in a function of its own: read_back after set_textures
// dies in staging_copy.
//
//   gpufuzz fuzz --target "gpufuzz-pool-target [--second-bug]" --runs 40
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpufuzz/target.hpp"

namespace gt = gpufuzz::target;

struct Block {
  Block* next;
};

struct Pool {
  std::vector<Block> blocks{Block{nullptr}, Block{nullptr}};
  unsigned out = 0;    // blocks handed out and not given back
  unsigned spare = 0;  // blocks out that the pool's release can do without
};

// Out of line, and kept out of the optimiser's view: these are the frames a crash report names.
[[gnu::noipa]] void block_unlink(Block** table, unsigned i) {
  table[i] = table[i]->next;
}

[[gnu::noipa]] void pool_free_blocks(Pool& pool) {
  // The bug: the table is torn down before the blocks still out are given back.
  std::vector<Block*> table;
  for (Block& b : pool.blocks)
    table.push_back(&b);
  Block** walked = pool.out > pool.spare ? nullptr : table.data();
  for (unsigned i = 0; i < table.size(); ++i)
    block_unlink(walked, i);
}

[[gnu::noipa]] void pool_release(Pool& pool) {
  pool_free_blocks(pool);
}

[[gnu::noipa]] void staging_copy(const std::vector<unsigned>* staging) {
  std::printf("%u\n", staging->at(0));
}

namespace {

class PoolTarget final : public gt::Target {
 public:
  explicit PoolTarget(bool secondBug) : secondBug_(secondBug) {}

  void run(const gt::Operation& op) override {
    if (op.op == "ctx_create") {
      contexts_[op.name()];
    } else if (op.op == "buf_create") {
      contexts_.at(op.names.at(0)).out++;
      owner_[op.names.at(1)] = op.names.at(0);
    } else if (op.op == "buf_destroy") {
      const auto ctx = contexts_.find(owner_.at(op.name()));
      if (ctx != contexts_.end()) ctx->second.out--;
      owner_.erase(op.name());
    } else if (op.op == "ctx_destroy") {
      pool_release(contexts_.at(op.name()));
      contexts_.erase(op.name());
    } else if (op.op == "create") {
      renderers_[op.name()].pool.spare = 1;
    } else if (op.op == "draw") {
      renderers_.at(op.name()).pool.out++;
    } else if (op.op == "sync") {
      renderers_.at(op.name()).pool.out = 0;
    } else if (op.op == "set_textures") {
      renderers_.at(op.name()).textured = true;
    } else if (op.op == "read_back") {
      Renderer& r = renderers_.at(op.name());
      if (secondBug_ && r.textured) staging_copy(nullptr);
      r.pool.out = 0;
    } else if (op.op == "destroy") {
      pool_release(renderers_.at(op.name()).pool);
      renderers_.erase(op.name());
    } else {
      throw gt::Unsupported();
    }
  }

 private:
  struct Renderer {
    Pool pool;
    bool textured = false;
  };
  bool secondBug_;
  std::map<std::string, Pool> contexts_;
  std::map<std::string, std::string> owner_;  // buffer -> its context
  std::map<std::string, Renderer> renderers_;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  const bool secondBug = args.size() > 1 && std::strcmp(args[1], "--second-bug") == 0;
  if (secondBug) args.erase(args.begin() + 1);
  return gt::main(static_cast<int>(args.size()), args.data(), "pool-target 1.0",
                  [secondBug] { return std::make_unique<PoolTarget>(secondBug); });
}
