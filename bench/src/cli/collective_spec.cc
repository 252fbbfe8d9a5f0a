#include "cli/collective_spec.h"

#include <algorithm>

#include "cli/alltoallv_matrix.h"
#include "smddp/communicator.h"
#include "smddp/traits.h"

namespace smddp::bench {

RowCounts row_counts(Collective c, size_t bytes, DataType dtype, int nranks, const AlltoallvPattern& alltoallv) {
  const CollectiveTraits& t = traits(c);
  const size_t es = dtype_size(dtype);
  const size_t n = static_cast<size_t>(nranks);
  const size_t elements = bytes / es;
  // A buffer of n blocks (or per-peer parts) splits the row's size.
  const bool splits = t.send == Extent::Ranks || t.recv == Extent::Ranks || t.per_peer();
  RowCounts r;
  r.count = t.send == Extent::None ? 0 : splits ? elements / n : elements;
  if (t.per_peer() && alltoallv.fixed_bytes()) {
    r.count = 0;
    r.send = r.recv = r.elements = alltoallv_counts(alltoallv, nranks, 0, es).largest_buffer();
  } else if (t.per_peer()) {
    r.send = r.recv = alltoallv_counts(alltoallv, nranks, r.count, es).largest_buffer();
    r.elements = r.count * n;
  } else {
    BufferCounts b = buffer_counts(c, r.count, nranks);
    r.send = b.send;
    r.recv = b.recv;
    r.elements = std::max(r.send, r.recv);
  }
  r.bytes = r.elements * es;
  return r;
}

double bus_factor(Collective c, int nranks) { return traits(c).bus_factor(nranks); }

}  // namespace smddp::bench
