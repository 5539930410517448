// CudaTools.h: where the CUDA toolkit's programs are (compute-sanitizer, cuda-gdb): the toolkit's
// bin folder is often not on PATH, so the usual places are looked in after it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpufuzz {

/// The first executable `name` in PATH's folders, then $CUDA_HOME/bin, then /usr/local/cuda/bin;
/// nothing when there is none.
std::optional<std::string> findCudaTool(std::string_view name);

/// Whether `path` names something this process may execute.
bool isExecutable(const std::string& path);

}  // namespace gpufuzz
