// Which allreduce algorithm a launch placement leads to. Each rank prints
// the communicator's placement verdict and the algorithm that ran 2-16 MiB
// float32 allreduces, checks the sums, and compares with what the command
// line expects:
//   mpi_placement_test --oversubscribed 0|1 --dedicated-cores 0|1|any --algorithm NAME
// Exit 1 on any mismatch on any rank (agreed through MPI_Allreduce), 64 on a
// bad command line.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "smddp/communicator.h"

using namespace smddp;

namespace {

struct Expected {
  std::string oversubscribed;   // "0" or "1"
  std::string dedicated_cores;  // "0", "1" or "any"
  std::string algorithm;
};

bool parse(int argc, char** argv, Expected& e) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--oversubscribed") e.oversubscribed = argv[i + 1];
    else if (flag == "--dedicated-cores") e.dedicated_cores = argv[i + 1];
    else if (flag == "--algorithm") e.algorithm = argv[i + 1];
    else return false;
  }
  return argc % 2 == 1 && !e.oversubscribed.empty() && !e.dedicated_cores.empty() && !e.algorithm.empty();
}

bool matches(const std::string& want, bool got) { return want == "any" || want == (got ? "1" : "0"); }

}  // namespace

int main(int argc, char** argv) {
  Expected want;
  if (!parse(argc, argv, want)) {
    std::fprintf(stderr, "usage: %s --oversubscribed 0|1 --dedicated-cores 0|1|any --algorithm NAME\n", argv[0]);
    return 64;
  }
  int failed = 0;
  {
    auto comm = Communicator::create();
    const int me = comm->rank();
    const int n = comm->size();
    const PlacementInfo p = comm->placement();
    std::string line = "rank " + std::to_string(me) + ": oversubscribed=" + std::to_string(p.oversubscribed) +
                       " dedicated_cores=" + std::to_string(p.dedicated_cores) + " host_ranks=" +
                       std::to_string(p.host_ranks) + " host_cpus=" + std::to_string(p.host_cpus);
    if (!matches(want.oversubscribed, p.oversubscribed) || !matches(want.dedicated_cores, p.dedicated_cores)) {
      failed = 1;
      line += " (expected oversubscribed=" + want.oversubscribed + " dedicated_cores=" + want.dedicated_cores + ")";
    }
    for (size_t mib = 2; mib <= 16; mib *= 2) {
      const size_t count = mib * (1 << 20) / sizeof(float);
      std::vector<float> send(count, static_cast<float>(me + 1)), recv(count, -1.0f);
      comm->allreduce(send.data(), recv.data(), count, DataType::Float32, ReduceOp::Sum);
      const float sum = static_cast<float>(n * (n + 1) / 2);
      bool right = true;
      for (float v : recv) right = right && v == sum;
      const std::string& ran = comm->last_algorithm();
      line += "; " + std::to_string(mib) + " MiB: " + ran;
      if (ran != want.algorithm || !right) {
        failed = 1;
        line += right ? " (expected " + want.algorithm + ")" : " (wrong sum)";
      }
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    int any = failed;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    failed = any;
  }
  MPI_Finalize();
  return failed;
}
