#include "collective_spec.h"

#include <algorithm>

#include "smddp/communicator.h"

namespace smddp::bench {

RowCounts row_counts(Collective c, size_t bytes, DataType dtype, int nranks) {
  const size_t es = dtype_size(dtype);
  const size_t n = static_cast<size_t>(nranks);
  size_t elements = bytes / es;
  RowCounts r;
  switch (c) {
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
      r.count = elements / n;
      break;
    case Collective::Barrier:
      r.count = 0;
      break;
    default:
      r.count = elements;
  }
  BufferCounts b = buffer_counts(c, r.count, nranks);
  r.send = b.send;
  r.recv = b.recv;
  r.elements = std::max(r.send, r.recv);
  r.bytes = r.elements * es;
  return r;
}

double bus_factor(Collective c, int nranks) {
  const double n = nranks;
  switch (c) {
    case Collective::AllReduce:
      return 2 * (n - 1) / n;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
      return (n - 1) / n;
    case Collective::Broadcast:
    case Collective::Reduce:
      return 1;
    case Collective::Barrier:
      return 0;
  }
  return 1;
}

}  // namespace smddp::bench
