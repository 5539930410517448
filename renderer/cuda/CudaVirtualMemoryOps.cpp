// CudaVirtualMemoryOps.cpp: the cuda-driver executor's handlers of virtual memory: address
// ranges, physical allocations and the mappings between them.
#include <algorithm>

#include "renderer/cuda/CudaDriverExecutorImpl.h"
#include "renderer/device/RuntimeSeam.h"

namespace gpufuzz::cudamodel {

// ---- Virtual memory ----------------------------------------------------------------------------

void CudaDriverExecutor::vaReserve(const ModelCall& c) {
  const std::string& name = c.names[0];
  currentPrimary(CallPoint::BufAlloc);
  auto v = std::make_shared<Va>();
  v->name = name;
  v->granules = c.arg("granules");
  ok(driver_.memAddressReserve(&v->base, v->granules * granularity_, granularity_, 0, 0),
     CallPoint::BufAlloc, "cuMemAddressReserve(" + name + ")");
  v->slots.resize(v->granules);
  vas_.add(name, std::move(v));
}

void CudaDriverExecutor::memCreate(const ModelCall& c) {
  const std::string& name = c.names[0];
  currentPrimary(CallPoint::BufAlloc);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device_;
  auto m = std::make_shared<Phys>();
  m->name = name;
  ok(driver_.memCreate(&m->handle, granularity_, &prop, 0), CallPoint::BufAlloc,
     "cuMemCreate(" + name + ")");
  m->shadow.assign(std::min(granularity_, kShadowBytes), kUnknown);
  physs_.add(name, std::move(m));
}

void CudaDriverExecutor::memMap(const ModelCall& c) {
  const std::shared_ptr<Va> va = vas_.named(c.names[0]);
  Va& v = *va;
  const std::shared_ptr<Phys> m = physs_.named(c.names[1]);
  const std::string& name = c.names[2];
  currentPrimary(CallPoint::BufAlloc);
  auto a = std::make_shared<Mapping>();
  a->name = name;
  a->phys = m;
  // cuMemMap maps only where nothing is mapped: the first free granule of the va, or, when it
  // has none, a range reserved for this mapping alone. An index, not an iterator, is kept across
  // the calls.
  const auto slot =
      static_cast<size_t>(std::find(v.slots.begin(), v.slots.end(), nullptr) - v.slots.begin());
  if (slot < v.slots.size()) {
    a->address = v.base + slot * granularity_;
  } else {
    a->ownRange = true;
    ok(driver_.memAddressReserve(&a->address, granularity_, granularity_, 0, 0),
       CallPoint::BufAlloc, "cuMemAddressReserve(a range of its own for " + name + ")");
  }
  const std::string call = "(" + name + ", " + v.name + ", " + m->name + ")";
  const CUresult mapped = driver_.memMap(a->address, granularity_, 0, m->handle, 0);
  if (mapped != CUDA_SUCCESS && a->ownRange) driver_.memAddressFree(a->address, granularity_);
  ok(mapped, CallPoint::BufAlloc, "cuMemMap" + call);
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device_;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  const CUresult set = driver_.memSetAccess(a->address, granularity_, &access, 1);
  if (set != CUDA_SUCCESS) {
    driver_.memUnmap(a->address, granularity_);
    if (a->ownRange) driver_.memAddressFree(a->address, granularity_);
    ok(set, CallPoint::BufAlloc, "cuMemSetAccess" + call);
  }
  if (!a->ownRange) v.slots[slot] = a;
  mappings_.add(name, std::move(a));
}

void CudaDriverExecutor::mapMemset(const ModelCall& c) {
  // The phys's last use and shadow are shared by all its mappings, and another name's va_free may
  // unmap this one: the check, the order and the work go together.
  const seam::KeepState keep;
  const std::shared_ptr<Mapping> mapping = mappings_.named(c.names[0]);
  Mapping& a = *mapping;
  // A mapping unmapped with its va's free has no memory behind it any more.
  if (a.unmapped) return;
  const std::shared_ptr<Stream> s = target(c.names[1], CallPoint::CopyToDevice);
  // Mappings give access to the executor's device only (cuMemSetAccess in mem_map).
  const std::shared_ptr<Stream> on =
      s->ctx->device == device_ ? s : detour(s, device_, CallPoint::CopyToDevice);
  Phys& m = *a.phys;
  const size_t bytes = std::min<size_t>(c.arg("bytes"), granularity_);
  const auto value = static_cast<uint8_t>(c.arg("value"));
  order(m.use, on, CallPoint::CopyToDevice);
  ok(driver_.memsetD8Async(a.address, value, bytes, on->handle), CallPoint::CopyToDevice,
     "cuMemsetD8Async(" + a.name + ", " + streamLabel(*on) + ")");
  rejoin(s, on, CallPoint::CopyToDevice);
  std::fill_n(m.shadow.begin(), std::min(bytes, m.shadow.size()), static_cast<int16_t>(value));
}

void CudaDriverExecutor::mapRead(const ModelCall& c) {
  // As mapMemset: the phys is shared by its mappings, and va_free may unmap this one.
  const seam::KeepState keep;
  const std::shared_ptr<Mapping> mapping = mappings_.named(c.names[0]);
  Mapping& a = *mapping;
  if (a.unmapped) return;
  const std::shared_ptr<Stream> s = target(c.names[1], CallPoint::CopyToHost);
  const std::shared_ptr<Stream> on =
      s->ctx->device == device_ ? s : detour(s, device_, CallPoint::CopyToHost);
  Phys& m = *a.phys;
  const size_t bytes = std::min({static_cast<size_t>(c.arg("bytes")), granularity_, kShadowBytes});
  order(m.use, on, CallPoint::CopyToHost);
  readBack(on, a.address, bytes, m.shadow, "cuMemcpyDtoHAsync(" + a.name + ", " + c.names[1] + ")",
           "mapping " + a.name + " of " + m.name);
}

void CudaDriverExecutor::memUnmap(const ModelCall& c) {
  const std::shared_ptr<Mapping> a = mappings_.take(c.names[0]);
  unmap(*a, nullptr);
}

void CudaDriverExecutor::unmap(Mapping& a, Va* va) {
  // mem_unmap and its va's va_free are different names: one unmaps, and the range is freed only
  // after. The phys's last use is shared by its mappings.
  const seam::KeepState keep;
  if (a.unmapped) return;
  currentPrimary(CallPoint::BufFree);
  // Unmapping memory that pending work still reaches is undefined: the executor waits first.
  hostWait(a.phys->use, CallPoint::BufFree);
  ok(driver_.memUnmap(a.address, granularity_), CallPoint::BufFree, "cuMemUnmap(" + a.name + ")");
  a.unmapped = true;
  if (a.ownRange) {
    ok(driver_.memAddressFree(a.address, granularity_), CallPoint::BufFree,
       "cuMemAddressFree(the range of " + a.name + ")");
    return;
  }
  for (auto& [name, v] : vas_) {
    if (va != nullptr && v.get() != va) continue;
    std::replace_if(
        v->slots.begin(), v->slots.end(),
        [&a](const std::shared_ptr<Mapping>& slot) { return slot.get() == &a; }, nullptr);
  }
}

void CudaDriverExecutor::vaFree(const ModelCall& c) {
  freeVa(c.names[0]);
}

void CudaDriverExecutor::freeVa(const std::string& name) {
  const std::shared_ptr<Va> v = vas_.take(name);
  // The documentation does not say what cuMemAddressFree does to mappings in the range: the
  // executor unmaps them first, and their names map nothing from then on.
  for (const std::shared_ptr<Mapping>& a : std::vector(v->slots)) {
    if (a) unmap(*a, v.get());
  }
  currentPrimary(CallPoint::BufFree);
  ok(driver_.memAddressFree(v->base, v->granules * granularity_), CallPoint::BufFree,
     "cuMemAddressFree(" + name + ")");
}

void CudaDriverExecutor::memRelease(const ModelCall& c) {
  releasePhys(c.names[0]);
}

void CudaDriverExecutor::releasePhys(const std::string& name) {
  const std::shared_ptr<Phys> m = physs_.take(name);
  currentPrimary(CallPoint::BufFree);
  // Mappings of it keep the memory until they are unmapped (documented).
  ok(driver_.memRelease(m->handle), CallPoint::BufFree, "cuMemRelease(" + name + ")");
}

}  // namespace gpufuzz::cudamodel
