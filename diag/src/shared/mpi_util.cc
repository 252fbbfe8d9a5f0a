#include "shared/mpi_util.h"

#include <sched.h>

#include <cstdlib>
#include <memory>
#include <thread>

#include "smddp/error.h"

namespace smddp::diag {

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"}) {
    if (std::getenv(var)) return true;
  }
  return false;
}

std::string mpi_error_string(int code) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(msg, static_cast<size_t>(len));
}

MpiSession::MpiSession() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
    if (rc != MPI_SUCCESS) throw TransportError("MPI_Init failed: " + mpi_error_string(rc));
    owns_ = true;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_ && !finalized) MPI_Finalize();
}

void MpiSession::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

void Backoff::pause() {
  ++spins_;
  if (spins_ < 64) return;
  if (spins_ < 256) {
    sched_yield();
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(spins_ < 2048 ? 50 : 500));
}

namespace {

// Waits for one request; on timeout it is cancelled (receives) or released
// (sends, whose buffer the caller then must keep alive: see send_until).
bool wait_until(MPI_Request& request, Deadline deadline, bool cancel) {
  Backoff backoff;
  for (;;) {
    int done = 0;
    int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) throw TransportError("MPI_Test failed: " + mpi_error_string(rc));
    if (done) return true;
    if (Clock::now() >= deadline) break;
    backoff.pause();
  }
  if (cancel) {
    MPI_Cancel(&request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  } else {
    MPI_Request_free(&request);
  }
  return false;
}

}  // namespace

bool send_until(MPI_Comm comm, int dest, int tag, const std::string& data, Deadline deadline) {
  // The buffer outlives a send that timed out (MPI may still read it), so it
  // is owned here and released only when the send completed.
  auto buffer = std::make_unique<std::string>(data);
  MPI_Request request;
  int rc = MPI_Isend(buffer->data(), static_cast<int>(buffer->size()), MPI_BYTE, dest, tag, comm, &request);
  if (rc != MPI_SUCCESS) throw TransportError("MPI_Isend failed: " + mpi_error_string(rc));
  if (wait_until(request, deadline, false)) return true;
  (void)buffer.release();  // deliberately kept: the send is still in flight
  return false;
}

std::optional<std::string> recv_until(MPI_Comm comm, int src, int tag, Deadline deadline, int* from) {
  Backoff backoff;
  MPI_Status status;
  for (;;) {
    int flag = 0;
    int rc = MPI_Iprobe(src, tag, comm, &flag, &status);
    if (rc != MPI_SUCCESS) throw TransportError("MPI_Iprobe failed: " + mpi_error_string(rc));
    if (flag) break;
    if (Clock::now() >= deadline) return std::nullopt;
    backoff.pause();
  }
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  std::string data(static_cast<size_t>(count), '\0');
  int rc = MPI_Recv(data.data(), count, MPI_BYTE, status.MPI_SOURCE, tag, comm, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) throw TransportError("MPI_Recv failed: " + mpi_error_string(rc));
  if (from) *from = status.MPI_SOURCE;
  return data;
}

std::vector<std::optional<std::string>> gather_until(MPI_Comm comm, int root, const std::string& mine, int tag,
                                                     Deadline deadline) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (rank != root) {
    send_until(comm, root, tag, mine, deadline);
    return {};
  }
  std::vector<std::optional<std::string>> out(static_cast<size_t>(size));
  out[static_cast<size_t>(root)] = mine;
  int missing = size - 1;
  while (missing > 0) {
    int from = -1;
    auto data = recv_until(comm, MPI_ANY_SOURCE, tag, deadline, &from);
    if (!data) break;
    if (!out[static_cast<size_t>(from)]) --missing;
    out[static_cast<size_t>(from)] = std::move(data);
  }
  return out;
}

std::optional<std::string> scatter_until(MPI_Comm comm, int root, const std::vector<std::string>& per_rank, int tag,
                                         Deadline deadline) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (rank != root) return recv_until(comm, root, tag, deadline);
  std::vector<std::unique_ptr<std::string>> buffers;
  std::vector<MPI_Request> requests;
  for (int r = 0; r < size; ++r) {
    if (r == root) continue;
    buffers.push_back(std::make_unique<std::string>(per_rank.at(static_cast<size_t>(r))));
    requests.emplace_back();
    int rc = MPI_Isend(buffers.back()->data(), static_cast<int>(buffers.back()->size()), MPI_BYTE, r, tag, comm,
                       &requests.back());
    if (rc != MPI_SUCCESS) throw TransportError("MPI_Isend failed: " + mpi_error_string(rc));
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!wait_until(requests[i], deadline, false)) (void)buffers[i].release();
  }
  return per_rank.at(static_cast<size_t>(root));
}

}  // namespace smddp::diag
