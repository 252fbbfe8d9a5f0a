#include "algorithms/shm_steps.h"

#include <algorithm>

#include "core/wait.h"

namespace smddp {

ShmSteps::ShmSteps(ShmSegment& segment, Router& router, const Topology& topo)
    : seg_(segment),
      router_(router),
      topo_(topo),
      n_(topo.local_size),
      me_(topo.local_rank),
      seen_done_(static_cast<size_t>(topo.local_size), 0) {}

std::atomic<uint64_t>& ShmSteps::counter(Counter which, int local) {
  RankControl& c = seg_.control(local);
  switch (which) {
    case Counter::Posted:
      return c.posted.value;
    case Counter::Reduced:
      return c.reduced.value;
    default:
      return c.done.value;
  }
}

uint64_t ShmSteps::wait_for(Counter which, int local, uint64_t at_least, const WaitScope& scope) {
  std::atomic<uint64_t>& c = counter(which, local);
  if (uint64_t v = c.load(std::memory_order_acquire); v >= at_least) return v;
  const int peer = topo_.node_ranks[topo_.node][local];
  Backoff backoff(scope.shared_cores);
  uint64_t v;
  while ((v = c.load(std::memory_order_acquire)) < at_least) {
    router_.progress_network();
    if (backoff.pause()) {
      router_.check_peer(peer, scope);
      if (scope.deadline.expired()) router_.timed_out(scope, peer, "waiting in shared memory for");
    }
  }
  return v;
}

int ShmSteps::begin(const WaitScope& scope, size_t lane_bytes) {
  ++step_;
  uint64_t depth = 2;  // steps that may be in flight on distinct regions
  if (lane_bytes == 0) {
    buffer_ = static_cast<int>(step_ % 2);
    lane_offset_ = 0;
  } else {
    // Lanes span both stage buffers, which are contiguous (shm_segment.cc).
    depth = std::min<uint64_t>(kMaxLanes, 2 * slot_bytes() / lane_bytes);
    buffer_ = 0;
    lane_offset_ = static_cast<size_t>(step_ % depth) * lane_bytes;
  }
  // Our region was last used `depth` steps ago; after a change of layout,
  // any earlier step may overlap it.
  const uint64_t lag = lane_bytes == lane_bytes_ ? depth : 1;
  lane_bytes_ = lane_bytes;
  if (step_ > lag) {
    // A peer's counter we saw far enough ahead need not be read again: with
    // lanes a root touches its readers' cache lines once per many calls.
    for (int p = 0; p < n_; ++p) {
      if (p == me_ || seen_done_[p] >= step_ - lag) continue;
      seen_done_[p] = wait_for(Counter::Done, p, step_ - lag, scope);
    }
  }
  return buffer_;
}

void ShmSteps::post() {
  ++announcements_;
  counter(Counter::Posted, me_).store(step_, std::memory_order_release);
}

void ShmSteps::wait_posted(const WaitScope& scope) {
  for (int p = 0; p < n_; ++p) {
    if (p != me_) wait_for(Counter::Posted, p, step_, scope);
  }
}

void ShmSteps::wait_posted(int local, const WaitScope& scope) {
  if (local != me_) wait_for(Counter::Posted, local, step_, scope);
}

void ShmSteps::post_reduced() {
  ++announcements_;
  counter(Counter::Reduced, me_).store(step_, std::memory_order_release);
}

void ShmSteps::wait_reduced(const WaitScope& scope) {
  for (int p = 0; p < n_; ++p) {
    if (p != me_) wait_for(Counter::Reduced, p, step_, scope);
  }
}

void ShmSteps::finish() { counter(Counter::Done, me_).store(step_, std::memory_order_release); }

void ShmSteps::wait_finished(const WaitScope& scope) {
  for (int p = 0; p < n_; ++p) {
    if (p != me_) wait_for(Counter::Done, p, step_, scope);
  }
}

void ShmSteps::expose(const void* address) {
  seg_.control(me_).exposed[buffer_].value.store(reinterpret_cast<uintptr_t>(address), std::memory_order_relaxed);
}

const void* ShmSteps::exposed(int local) {
  return reinterpret_cast<const void*>(seg_.control(local).exposed[buffer_].value.load(std::memory_order_relaxed));
}

}  // namespace smddp
