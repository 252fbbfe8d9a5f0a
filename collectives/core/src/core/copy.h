// Copies for the shm-direct paths. A large output buffer will not stay in
// cache anyway, so writing it with non-temporal stores saves the read for
// ownership each ordinary store would cost: a third of the memory traffic.
#pragma once

#include <cstddef>

namespace smddp {

// Outputs at least this large are written with streaming stores.
inline constexpr size_t kStreamingOutputBytes = 4u << 20;

// memcpy with non-temporal stores; ends with a store fence.
void copy_streaming(void* dst, const void* src, size_t bytes);

// copy_streaming when `total_output_bytes` is large, memcpy otherwise.
void copy_out(void* dst, const void* src, size_t bytes, size_t total_output_bytes);

}  // namespace smddp
