// The operations the libfabric transport posts, and their pool. Every posted
// tagged send or receive carries an Op as its context; the completion hands
// it back. The pool only grows (to the most ops ever in flight) and reuses
// them, so posting a message allocates nothing in steady state.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "transports/transport.h"

namespace smddp {

struct FabricOp {
  fi_context2 context;  // first member: libfabric hands &context back as op_context
  enum class Kind : uint8_t { Data, Ping, Sink } kind = Kind::Data;
  bool send = false;
  bool posted = false;  // Data: handed to libfabric, not yet complete
  Request* request = nullptr;  // Data: the request this piece belongs to
  int peer = -1;
  char* buf = nullptr;
  size_t bytes = 0;
  uint64_t tag = 0;
  fid_mr* mr = nullptr;  // per-op registration (FI_MR_LOCAL providers)
  void* desc = nullptr;

  static FabricOp* of(void* context) { return reinterpret_cast<FabricOp*>(context); }
};

class FabricOpPool {
 public:
  FabricOpPool() = default;
  FabricOpPool(const FabricOpPool&) = delete;
  FabricOpPool& operator=(const FabricOpPool&) = delete;
  // Closes the registrations of ops never released (cancelled at close).
  ~FabricOpPool() {
    for (FabricOp& op : ops_) {
      if (op.mr) fi_close(&op.mr->fid);
    }
  }

  FabricOp* get() {
    if (free_.empty()) {
      ops_.emplace_back();
      free_.push_back(&ops_.back());
    }
    FabricOp* op = free_.back();
    free_.pop_back();
    *op = FabricOp{};
    return op;
  }

  void put(FabricOp* op) {
    if (op->mr) fi_close(&op->mr->fid);
    op->mr = nullptr;
    free_.push_back(op);
  }

 private:
  std::deque<FabricOp> ops_;  // stable addresses
  std::vector<FabricOp*> free_;
};

}  // namespace smddp
