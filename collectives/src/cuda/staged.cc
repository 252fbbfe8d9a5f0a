// cuda_staged: collectives on device buffers through pinned host memory, the
// Herring path between nodes (device to host, host-side collective, host to
// device). One algorithm for every collective that moves data, since only
// the shape of the copies differs.
//
// Vocabulary:
//  - side: the device buffer a rank copies down (input) or up (output), as
//    `blocks` runs of the same length `pitch` elements apart (1 block for
//    allreduce, n blocks for the allgather output, the reduce-scatter input
//    and both alltoall buffers);
//  - chunk: the same element range [c0, c0 + len) of every block of a side;
//    the host collective sees it as `blocks` contiguous runs of len;
//  - slot: one of two pinned host buffer pairs (in, out) a chunk is staged in.
//
// alltoallv (per-peer counts) is staged whole, without the pipeline.
//
// Pipeline: chunk k+1 comes down (stream `down`) while the host collective
// runs on chunk k, and chunk k-1 goes up (stream `up`). The host collective is
// any host algorithm the selector picks (shm_direct in a node, hierarchical
// or ring between nodes), on the same group.
#include "cuda/staged.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "algorithms/catalog.h"
#include "algorithms/registry.h"
#include "cuda/kernels.h"
#include "cuda/runtime.h"
#include "smddp/communicator.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/traits.h"

namespace smddp {
namespace {

struct Side {
  const void* base = nullptr;
  int blocks = 1;
  size_t pitch = 0;  // elements from one block to the next
};

struct Plan {
  size_t span = 0;           // element positions the chunks walk
  bool down = true;          // this rank supplies input
  bool up = true;            // this rank receives output
  bool host_in_place = true; // the host call runs with send == recv (one slot buffer)
  Side in, out;
};

bool blocked(const CollectiveTraits& t) { return t.send == Extent::Ranks || t.recv == Extent::Ranks; }

// The copies follow the collective's row (smddp/traits.h): a side of n
// blocks walks block by block, ranks that do not use a side skip it.
Plan plan_of(const Group& g, const Call& c) {
  const int n = g.size();
  const CollectiveTraits& t = traits(c.collective);
  const int root = t.has_root ? c.root : -1;
  Plan p;
  p.span = blocked(t) ? c.blocks.length(0) : c.count;
  p.in = {c.send, t.send == Extent::Ranks ? n : 1, p.span};
  p.out = {c.recv, t.recv == Extent::Ranks ? n : 1, p.span};
  p.down = t.sends_on(g.me, root);
  p.up = t.receives_on(g.me, root);
  // The root of a collective only the root feeds, in place, holds its output.
  if (t.send_on == Ranks::Root && g.me == root && c.send == c.recv) p.up = false;
  p.host_in_place = p.in.blocks == 1 && p.out.blocks == 1;
  return p;
}

// Per thread and device: the engine runs a communicator's calls on one thread.
struct Staging {
  cuda::Stream down, up;
  cuda::Event down_done[2], up_done[2];
  bool up_pending[2] = {false, false};
  cuda::PinnedBuffer in[2], out[2];
};

Staging& staging() {
  thread_local std::map<int, std::unique_ptr<Staging>> by_device;
  int device = 0;
  cuda::check(cudaGetDevice(&device), "cudaGetDevice");
  auto& s = by_device[device];
  if (!s) s = std::make_unique<Staging>();
  return *s;
}

// cudaMemcpy2DAsync refuses pitches above cudaDevAttrMaxPitch (2^31 - 1 on
// sm_80/sm_90): blocks of 2 GiB and more are a row-by-row loop instead.
size_t max_pitch() {
  thread_local std::map<int, size_t> by_device;
  int device = 0;
  cuda::check(cudaGetDevice(&device), "cudaGetDevice");
  auto it = by_device.find(device);
  if (it != by_device.end()) return it->second;
  int pitch = 0;
  cuda::check(cudaDeviceGetAttribute(&pitch, cudaDevAttrMaxPitch, device), "cudaDeviceGetAttribute(MaxPitch)");
  return by_device[device] = static_cast<size_t>(pitch > 0 ? pitch : 0);
}

void copy(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, int rows,
          cudaStream_t stream) {
  if (rows == 1) {
    cuda::check(cudaMemcpyAsync(dst, src, width, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
    return;
  }
  const size_t most = max_pitch();
  if (dpitch <= most && spitch <= most) {
    cuda::check(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDefault, stream),
                "cudaMemcpy2DAsync");
    return;
  }
  for (int r = 0; r < rows; ++r) {
    cuda::check(cudaMemcpyAsync(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch,
                                width, cudaMemcpyDefault, stream),
                "cudaMemcpyAsync (pitch above cudaDevAttrMaxPitch)");
  }
}

class StagedRun {
 public:
  StagedRun(Context& ctx, const Group& g, const Call& call)
      : ctx_(ctx), g_(g), call_(call), plan_(plan_of(g, call)), st_(staging()), es_(call.esize()) {
    const int widest = std::max(plan_.in.blocks, plan_.out.blocks);
    chunk_ = std::max<size_t>(1, cuda::staging_chunk_bytes() / (es_ * static_cast<size_t>(widest)));
    chunks_ = (plan_.span + chunk_ - 1) / chunk_;
  }

  void run() {
    st_.up_pending[0] = st_.up_pending[1] = false;
    bring_down(0);
    for (size_t k = 0; k < chunks_; ++k) {
      if (k + 1 < chunks_) bring_down(k + 1);
      const int s = slot(k);
      if (plan_.down) wait(st_.down_done[s], "copying device to host");
      if (st_.up_pending[s]) wait(st_.up_done[s], "copying host to device");
      run_host(k);
      send_up(k);
    }
    for (int s = 0; s < 2; ++s) {
      if (st_.up_pending[s]) wait(st_.up_done[s], "copying host to device");
    }
  }

 private:
  static int slot(size_t k) { return static_cast<int>(k % 2); }
  size_t first(size_t k) const { return k * chunk_; }
  size_t length(size_t k) const { return std::min(chunk_, plan_.span - first(k)); }

  char* in_slot(int s) { return st_.in[s].get(chunk_ * es_ * plan_.in.blocks); }
  char* out_slot(int s) {
    return plan_.host_in_place ? in_slot(s) : st_.out[s].get(chunk_ * es_ * plan_.out.blocks);
  }

  void bring_down(size_t k) {
    if (!plan_.down) return;
    const int s = slot(k);
    // The slot's previous chunk may still be going up from the same memory.
    if (st_.up_pending[s]) cuda::check(cudaStreamWaitEvent(st_.down.get(), st_.up_done[s].get(), 0), "cudaStreamWaitEvent");
    const size_t len = length(k);
    copy(in_slot(s), len * es_, static_cast<const char*>(plan_.in.base) + first(k) * es_, plan_.in.pitch * es_,
         len * es_, plan_.in.blocks, st_.down.get());
    st_.down_done[s].record(st_.down.get());
  }

  void run_host(size_t k) {
    const int s = slot(k);
    const size_t len = length(k);
    Call c = call_;
    c.memory = MemoryKind::Host;  // the staging slots: host algorithms run it
    c.send = in_slot(s);
    c.recv = out_slot(s);
    c.count = len;
    if (blocked(traits(c.collective))) c.blocks = patterns::Partition::equal(len, g_.size());
    ctx_.run(g_, c);
  }

  void send_up(size_t k) {
    if (!plan_.up) return;
    const int s = slot(k);
    const size_t len = length(k);
    copy(static_cast<char*>(const_cast<void*>(plan_.out.base)) + first(k) * es_, plan_.out.pitch * es_, out_slot(s),
         len * es_, len * es_, plan_.out.blocks, st_.up.get());
    st_.up_done[s].record(st_.up.get());
    st_.up_pending[s] = true;
  }

  void wait(const cuda::Event& e, const char* doing) {
    const std::string what(ctx_.scope.collective);
    cuda::wait(e.get(), ctx_.scope.deadline, ctx_.scope.shared_cores, what.c_str(), ctx_.scope.timeout_seconds, doing);
  }

  Context& ctx_;
  const Group& g_;
  const Call& call_;
  const Plan plan_;
  Staging& st_;
  const size_t es_;
  size_t chunk_ = 1;
  size_t chunks_ = 0;
};

// alltoallv: parts of uneven length do not chunk alike on every rank, so
// the whole buffers are staged at once (down, host call, up), unpipelined.
void staged_per_peer(Context& ctx, const Group& g, const Call& call) {
  const size_t es = call.esize();
  size_t sends = 0, recvs = 0;
  for (int p = 0; p < g.size(); ++p) {
    sends += call.send_counts[p];
    recvs += call.recv_counts[p];
  }
  Staging& st = staging();
  const std::string what(ctx.scope.collective);
  auto wait = [&](const cuda::Event& e, const char* doing) {
    cuda::wait(e.get(), ctx.scope.deadline, ctx.scope.shared_cores, what.c_str(), ctx.scope.timeout_seconds, doing);
  };
  Call c = call;
  c.send = st.in[0].get(std::max<size_t>(1, sends * es));
  c.recv = st.out[0].get(std::max<size_t>(1, recvs * es));
  c.memory = MemoryKind::Host;  // the staging buffers: host algorithms run it
  if (sends) {
    copy(const_cast<void*>(c.send), 0, call.send, 0, sends * es, 1, st.down.get());
    st.down_done[0].record(st.down.get());
    wait(st.down_done[0], "copying device to host");
  }
  ctx.run(g, c);
  if (recvs) {
    copy(call.recv, 0, c.recv, 0, recvs * es, 1, st.up.get());
    st.up_done[0].record(st.up.get());
    wait(st.up_done[0], "copying host to device");
  }
}

bool on_device(const void* p, size_t elements) { return elements == 0 || cuda::is_device_pointer(p); }

}  // namespace

const char* cuda_staged_accepts(const CallShape& shape) {
  // Modelled calls have no buffers to look at.
  if (!shape.call || !shape.live_group) return shape.memory == MemoryKind::Cuda ? nullptr : "needs CUDA device buffers";
  const Call& call = *shape.call;
  const Group& g = *shape.live_group;
  if (traits(call.collective).per_peer()) {
    const BufferCounts b = buffer_counts(call.collective, 0, g.size(), call.send_counts, call.recv_counts);
    return on_device(call.send, b.send) && on_device(call.recv, b.recv) ? nullptr : "needs CUDA device buffers";
  }
  const Plan p = plan_of(g, call);
  if (p.span == 0) {
    // Nothing to stage; null pointers are fine, host ones are not ours.
    const auto ours = [](const void* ptr) { return ptr == nullptr || cuda::is_device_pointer(ptr); };
    return ours(p.in.base) && ours(p.out.base) ? nullptr : "needs CUDA device buffers";
  }
  if (blocked(traits(call.collective)) && call.blocks.total % static_cast<size_t>(call.blocks.parts) != 0) {
    return "needs blocks of equal length";
  }
  if (p.down && !cuda::is_device_pointer(p.in.base)) return "needs CUDA device buffers";
  if (p.up && !cuda::is_device_pointer(p.out.base)) return "needs CUDA device buffers";
  return nullptr;
}

void cuda_staged(Context& ctx, const Group& g, const Call& call) {
  if (traits(call.collective).per_peer()) return staged_per_peer(ctx, g, call);
  if (plan_of(g, call).span == 0) return;
  StagedRun(ctx, g, call).run();
}

namespace cuda {

size_t staging_chunk_bytes() {
  static const size_t bytes = [] {
    // 1024..4G; the default, 4M, amortises a host collective and fits in L2/LLC.
    return static_cast<size_t>(config::bytes("SMDDP_CUDA_CHUNK_BYTES"));
  }();
  return bytes;
}

void divide_on_device(void* dst, size_t count, DataType dtype, int divisor) {
  if (count == 0) return;
  Staging& st = staging();
  divide(dst, count, dtype, divisor, st.up.get());
  check(cudaStreamSynchronize(st.up.get()), "cudaStreamSynchronize after divide");
}

}  // namespace cuda
}  // namespace smddp
