// What the Communicator needs to run calls whose buffers live in CUDA device
// memory (CUDA builds only). The algorithm itself, "cuda_staged", is a
// registry row for every collective that moves data (catalog.h), and the
// selector's candidate for device memory (selector.cc).
#pragma once

#include <cstddef>
#include <string_view>

#include "smddp/types.h"

namespace smddp::cuda {

// dst[i] /= divisor on device memory, the last step of Avg; returns when done.
void divide_on_device(void* dst, size_t count, DataType dtype, int divisor);

// Bytes of the largest staging slot (one chunk of one side). Default 4 MiB;
// SMDDP_CUDA_CHUNK_BYTES overrides it (read once; UsageError when invalid).
size_t staging_chunk_bytes();

}  // namespace smddp::cuda
