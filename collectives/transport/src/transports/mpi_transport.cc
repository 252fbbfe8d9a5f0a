#include "transports/mpi_transport.h"

#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "smddp/error.h"

namespace smddp {
namespace {

static_assert(sizeof(MPI_Request) <= sizeof(void*), "MPI_Request must fit Request::impl");

MPI_Request to_mpi(void* impl) {
  MPI_Request r;
  std::memcpy(&r, &impl, sizeof(r));
  return r;
}
void* from_mpi(MPI_Request r) {
  void* impl = nullptr;
  std::memcpy(&impl, &r, sizeof(r));
  return impl;
}

// Messages above INT_MAX bytes are split, as MPI counts are ints.
constexpr size_t kMaxPiece = size_t{1} << 30;
constexpr unsigned kIdleProgressEvery = 16;  // progress() calls between idle MPI progress

class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(MPI_Comm parent) {
    MPI_Comm_dup(parent, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    int flag = 0;
    int* ub = nullptr;
    MPI_Comm_get_attr(comm_, MPI_TAG_UB, &ub, &flag);
    tag_ub_ = flag && ub ? *ub : 32767;
  }
  ~MpiTransport() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  std::string_view name() const override { return "mpi"; }

  void post(Request& r) override {
    r.offset = 0;
    r.done = r.bytes == 0;
    if (!r.done) {
      start_piece(r);
      active_.push_back(&r);
    }
  }

  void progress() override {
    // Nothing of ours in flight: still let MPI progress now and then, since
    // Open MPI (ob1 over tcp) may report a send complete before its last
    // fragments have left, and the peer waits for them.
    if (active_.empty()) {
      if (++idle_calls_ % kIdleProgressEvery == 0) {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
      }
      return;
    }
    for (size_t i = 0; i < active_.size();) {
      Request& r = *active_[i];
      MPI_Request mr = to_mpi(r.impl);
      int flag = 0;
      check(MPI_Test(&mr, &flag, MPI_STATUS_IGNORE), r);
      r.impl = from_mpi(mr);
      if (!flag) {
        ++i;
        continue;
      }
      r.offset += std::min(kMaxPiece, r.bytes - r.offset);
      if (r.offset < r.bytes) {
        start_piece(r);
        ++i;
        continue;
      }
      r.done = true;
      active_[i] = active_.back();
      active_.pop_back();
    }
  }

  void check_peer(int) override {}

 private:
  void start_piece(Request& r) {
    int bytes = static_cast<int>(std::min(kMaxPiece, r.bytes - r.offset));
    char* p = static_cast<char*>(r.buf) + r.offset;
    int tag = r.tag % tag_ub_;
    MPI_Request mr;
    if (r.kind == Request::Kind::Send) {
      check(MPI_Isend(p, bytes, MPI_BYTE, r.peer, tag, comm_, &mr), r);
    } else {
      check(MPI_Irecv(p, bytes, MPI_BYTE, r.peer, tag, comm_, &mr), r);
    }
    r.impl = from_mpi(mr);
  }

  void check(int rc, const Request& r) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw TransportError("MPI " + std::string(r.kind == Request::Kind::Send ? "send to" : "receive from") +
                         " rank " + std::to_string(r.peer) + " failed: " + std::string(msg, len));
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int tag_ub_ = 32767;
  std::vector<Request*> active_;
  unsigned idle_calls_ = 0;
};

}  // namespace

std::unique_ptr<Transport> make_mpi_transport(MPI_Comm comm) {
  return std::make_unique<MpiTransport>(comm);
}

}  // namespace smddp
