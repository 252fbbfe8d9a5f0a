#include <mpi.h>
#include <unistd.h>

#include <cstring>

#include "core/check.h"
#include "smddp/error.h"
#include "bootstrap/bootstrap.h"
#include "transports/mpi_transport.h"

namespace smddp {
namespace {

void mpi_check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw TransportError(std::string("MPI ") + what + " failed: " + std::string(msg, len));
}

class MpiBootstrap final : public Bootstrap {
 public:
  MpiBootstrap() : MpiBootstrap(MPI_COMM_NULL) {}
  // `parent` null: MPI_COMM_WORLD, initialising MPI when the caller has not.
  // Otherwise a communicator of ours (split()) that this bootstrap owns.
  explicit MpiBootstrap(MPI_Comm parent) {
    if (parent != MPI_COMM_NULL) {
      comm_ = parent;
      MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
      MPI_Comm_rank(comm_, &rank_);
      MPI_Comm_size(comm_, &size_);
      return;
    }
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided), "MPI_Init");
    }
    // A private duplicate keeps our traffic apart from the application's.
    mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiBootstrap() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allgather(const void* in, void* out, size_t bytes) override {
    mpi_check(MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes),
                            MPI_BYTE, comm_),
              "MPI_Allgather");
  }

  void barrier() override { mpi_check(MPI_Barrier(comm_), "MPI_Barrier"); }

  int shared_memory_key() override {
    MPI_Comm shared;
    mpi_check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &shared),
              "MPI_Comm_split_type");
    // The lowest world rank in the shared-memory group names the group.
    int key = rank_;
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, &key, 1, MPI_INT, MPI_MIN, shared), "MPI_Allreduce");
    MPI_Comm_free(&shared);
    return key;
  }

  std::unique_ptr<Transport> make_network_transport() override {
    return make_mpi_transport(comm_);
  }

  std::unique_ptr<Bootstrap> split(int color, int key) override {
    MPI_Comm sub = MPI_COMM_NULL;
    mpi_check(MPI_Comm_split(comm_, color, key, &sub), "MPI_Comm_split");
    return std::make_unique<MpiBootstrap>(sub);
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

std::unique_ptr<Bootstrap> make_mpi_bootstrap() { return std::make_unique<MpiBootstrap>(); }

}  // namespace smddp
