#include "sweep/system_info.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace smddp::bench {

double available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (f >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

double physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
}

std::string mpi_library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(buf, &len);
  std::string v(buf, len);
  auto comma = v.find(',');
  return v.substr(0, comma);
}

double measure_memory_bandwidth(Communicator& comm) {
  double gbps = 0;
  if (comm.rank() == 0) {
    constexpr size_t kBytes = 256u << 20;  // far beyond any cache
    std::vector<char> a(kBytes, 1), b(kBytes, 2);
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      std::memcpy(b.data(), a.data(), kBytes);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::min(best, s);
      std::swap(a, b);
    }
    gbps = 2.0 * kBytes / best / 1e9;
  }
  comm.broadcast(&gbps, &gbps, 1, DataType::Float64, 0);
  return gbps;
}

}  // namespace smddp::bench
