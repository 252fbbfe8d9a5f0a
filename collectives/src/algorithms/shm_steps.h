// The shm-direct step protocol. Every local rank owns two stage buffers and
// two result buffers in the node segment and three counters (posted,
// reduced, done). A step k uses buffer k % 2:
//   begin()          wait until every peer is done with step k-2 (so our
//                    buffer k % 2 is free again), return the buffer index
//   ... fill our stage buffer ...
//   post()           announce it; wait_posted() waits for peers'
//   ... read peers' stage buffers, fill our result buffer ...
//   post_reduced()   announce it; wait_reduced() waits for peers'
//   finish()         we are done reading peers' buffers of step k
// Double buffering lets a fast rank stage step k+1 while slow ones still
// read step k. All local ranks run the same sequence of steps.
//
// Small payloads may use lanes instead: begin(scope, lane_bytes) cuts our
// two stage buffers into up to kMaxLanes lanes and step k uses lane
// k % lanes, so a rank may run that many steps ahead of slow readers (a
// broadcast root need not wait for readers to be scheduled). Switching
// between lanes and whole buffers waits until peers are done with every
// earlier step, since the regions overlap.
#pragma once

#include <cstdint>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transports/router.h"
#include "transports/shm_segment.h"

namespace smddp {

class ShmSteps {
 public:
  ShmSteps(ShmSegment& segment, Router& router, const Topology& topo);

  size_t slot_bytes() const { return seg_.geometry().slot_bytes; }
  int size() const { return n_; }
  int me() const { return me_; }

  static constexpr uint64_t kMaxLanes = 64;

  // lane_bytes 0: a whole stage buffer; else a lane of that many bytes
  // (at most slot_bytes()).
  int begin(const WaitScope& scope, size_t lane_bytes = 0);
  char* stage(int local) { return seg_.stage(local, buffer_) + lane_offset_; }
  char* result(int local) { return seg_.result(local, buffer_); }

  void post();
  void wait_posted(const WaitScope& scope);            // all peers
  void wait_posted(int local, const WaitScope& scope);  // one peer
  void post_reduced();
  void wait_reduced(const WaitScope& scope);
  void finish();
  // Waits until every peer has finished the current step (so buffers it
  // read directly from us may change again).
  void wait_finished(const WaitScope& scope);

  // Single-copy steps (cma): publish the address of one of our buffers
  // before post(); after wait_posted(), exposed(p) is peer p's. One slot
  // per step parity, like the stage buffers: a peer already in the next
  // step publishes into the other.
  void expose(const void* address);
  const void* exposed(int local);

  // post() and post_reduced() calls so far: the synchronisations a rank
  // announced, one per step of an algorithm's schedule (smddp/schedule.h).
  uint64_t announcements() const { return announcements_; }

 private:
  enum class Counter { Posted, Reduced, Done };
  // Returns the counter's value, at least `at_least`.
  uint64_t wait_for(Counter which, int local, uint64_t at_least, const WaitScope& scope);
  std::atomic<uint64_t>& counter(Counter which, int local);

  ShmSegment& seg_;
  Router& router_;
  const Topology& topo_;
  int n_ = 1;
  int me_ = 0;
  uint64_t step_ = 0;
  int buffer_ = 0;
  size_t lane_offset_ = 0;  // into our stage buffers, lane steps only
  size_t lane_bytes_ = 0;   // of the previous step; 0: whole buffers
  std::vector<uint64_t> seen_done_;  // per peer: its Done counter when last read
  uint64_t announcements_ = 0;
};

}  // namespace smddp
