// The node's shared-memory segment and its layout.
//
// One segment per node, created by the node's first rank under an
// unguessable name (O_EXCL, mode 0600), attached by the others, and unlinked
// as soon as every local rank has mapped it: from then on the kernel frees it
// when the last process exits, however the processes end.
//
// Layout (every part cache-line aligned):
//   header | control[n] | channel control[n*n] | cells[n*n][kCells] | slots[n]
// A channel (i -> j) is a single-producer single-consumer ring of cells for
// point-to-point messages. A rank's slots are two stage buffers and two
// result buffers used by the shm-direct algorithms, double-buffered so step
// k+1 can fill one while peers still read step k from the other.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace smddp {

class Bootstrap;
struct Topology;

inline constexpr size_t kCacheLine = 64;

struct alignas(kCacheLine) PaddedCounter {
  std::atomic<uint64_t> value{0};
};

// Progress of one rank through the shm-direct steps (see shm_steps.h).
struct alignas(kCacheLine) RankControl {
  PaddedCounter posted;   // stage buffer of step k is filled
  PaddedCounter reduced;  // result buffer of step k is filled
  PaddedCounter done;     // finished reading peers' buffers of step k
  PaddedCounter exposed[2];  // per step parity: a buffer peers read directly (cma), valid once posted
};

struct alignas(kCacheLine) ChannelControl {
  PaddedCounter head;  // cells produced (written by the sender)
  PaddedCounter tail;  // cells consumed (written by the receiver)
};

struct CellHeader {
  uint32_t tag;
  uint32_t bytes;
};

struct ShmGeometry {
  uint32_t nranks = 0;
  uint32_t cells = 0;       // cells per channel
  uint64_t cell_bytes = 0;  // payload bytes per cell
  uint64_t slot_bytes = 0;  // bytes of each stage/result buffer
};

class ShmSegment {
 public:
  // Collective over the bootstrap: every rank gets its node's segment; a
  // rank alone on its node takes part (the others' allgathers need it) and
  // gets none (nullptr).
  static std::unique_ptr<ShmSegment> create_for_node(Bootstrap& bootstrap, const Topology& topo);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  const ShmGeometry& geometry() const { return geometry_; }
  int nranks() const { return static_cast<int>(geometry_.nranks); }

  RankControl& control(int local);
  ChannelControl& channel(int from, int to);
  char* cell(int from, int to, uint64_t index);  // header, then payload
  char* stage(int local, int buffer);
  char* result(int local, int buffer);

 private:
  ShmSegment(void* base, size_t bytes, const ShmGeometry& g);
  // Maps the cells of local rank `me`'s channels (to and from each peer).
  void map_channels_of(int me);
  void* base_ = nullptr;
  size_t bytes_ = 0;
  ShmGeometry geometry_;
  size_t control_off_ = 0, channel_off_ = 0, cells_off_ = 0, slots_off_ = 0;
  size_t cell_stride_ = 0;
};

}  // namespace smddp
