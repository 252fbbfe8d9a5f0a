#include "transports/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "core/check.h"
#include "smddp/common/crypto.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "bootstrap/bootstrap.h"

namespace smddp {
namespace {

constexpr uint64_t kMagic = 0x534d44445053484dULL;  // "SMDDPSHM"
constexpr uint32_t kDefaultCells = 16;

struct alignas(kCacheLine) SegmentHeader {
  uint64_t magic;
  ShmGeometry geometry;
  uint64_t total_bytes;
};

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

struct Offsets {
  size_t control, channel, cells, slots, cell_stride, total;
};

Offsets layout(const ShmGeometry& g) {
  Offsets o{};
  size_t n = g.nranks;
  o.control = round_up(sizeof(SegmentHeader), kCacheLine);
  o.channel = o.control + n * sizeof(RankControl);
  o.cells = o.channel + n * n * sizeof(ChannelControl);
  o.cell_stride = round_up(sizeof(CellHeader), kCacheLine) + g.cell_bytes;
  o.slots = round_up(o.cells + n * n * g.cells * o.cell_stride, 4096);
  o.total = o.slots + n * 4 * g.slot_bytes;
  return o;
}

std::string random_name() { return "/smddp-" + crypto::random_hex(16); }

// Slot for the name exchange: a name, or an error from the creating rank.
struct NameRecord {
  char name[64];
  char error[192];
  int32_t usage = 0;  // the error is the settings' (UsageError: exit 64), not the transport's
};

}  // namespace

ShmSegment::ShmSegment(void* base, size_t bytes, const ShmGeometry& g)
    : base_(base), bytes_(bytes), geometry_(g) {
  Offsets o = layout(g);
  control_off_ = o.control;
  channel_off_ = o.channel;
  cells_off_ = o.cells;
  slots_off_ = o.slots;
  cell_stride_ = o.cell_stride;
}

ShmSegment::~ShmSegment() {
  if (base_) munmap(base_, bytes_);
}

std::unique_ptr<ShmSegment> ShmSegment::create_for_node(Bootstrap& bootstrap, const Topology& topo) {
  const bool alone = topo.local_size == 1;
  const bool leader = topo.local_rank == 0 && !alone;
  NameRecord mine{};
  void* base = nullptr;
  size_t total = 0;
  std::string name;
  ShmGeometry g;
  if (leader) {
    try {
      g.nranks = static_cast<uint32_t>(topo.local_size);
      g.cells = kDefaultCells;
      // Checked (>= 4096, a multiple of the 64-byte cache line) before connecting.
      g.cell_bytes = config::bytes("SMDDP_SHM_CELL_BYTES");
      g.slot_bytes = config::bytes("SMDDP_SHM_SLOT_BYTES");
      total = layout(g).total;
      name = random_name();
      int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd < 0) throw TransportError("shm_open(" + name + "): " + strerror(errno));
      // Reserve the pages now: a full /dev/shm is an error here, not a SIGBUS later.
      int rc = posix_fallocate(fd, 0, static_cast<off_t>(total));
      if (rc == 0) {
        base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      }
      close(fd);
      if (rc != 0 || base == MAP_FAILED) {
        shm_unlink(name.c_str());
        base = nullptr;
        // Too large for /dev/shm: the sizes asked for, which the user can change.
        if (rc == ENOSPC || rc == EFBIG) {
          throw UsageError("the shared-memory segment of " + std::to_string(g.nranks) + " ranks needs " +
                           std::to_string(total >> 20) + " MiB, more than /dev/shm has free: lower "
                           "SMDDP_SHM_CELL_BYTES or SMDDP_SHM_SLOT_BYTES, or enlarge /dev/shm");
        }
        throw TransportError("cannot allocate " + std::to_string(total >> 20) +
                             " MiB in /dev/shm: " + strerror(rc ? rc : errno));
      }
      auto* header = new (base) SegmentHeader{kMagic, g, total};
      (void)header;
      Offsets o = layout(g);
      for (uint32_t i = 0; i < g.nranks; ++i) {
        new (static_cast<char*>(base) + o.control + i * sizeof(RankControl)) RankControl{};
      }
      for (uint32_t i = 0; i < g.nranks * g.nranks; ++i) {
        new (static_cast<char*>(base) + o.channel + i * sizeof(ChannelControl)) ChannelControl{};
      }
      std::snprintf(mine.name, sizeof(mine.name), "%s", name.c_str());
    } catch (const Error& e) {
      std::snprintf(mine.error, sizeof(mine.error), "%s", e.what());
      mine.usage = dynamic_cast<const UsageError*>(&e) ? 1 : 0;
    }
  }

  std::vector<NameRecord> all(topo.size);
  bootstrap.allgather(&mine, all.data(), sizeof(NameRecord));
  const NameRecord& ours = all[topo.node_ranks[topo.node][0]];

  std::string error = ours.error;
  if (!leader && !alone && error.empty()) {
    int fd = shm_open(ours.name, O_RDWR, 0600);
    struct stat st{};
    if (fd >= 0 && fstat(fd, &st) == 0) {
      total = static_cast<size_t>(st.st_size);
      base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (base == MAP_FAILED) base = nullptr;
    }
    if (fd >= 0) close(fd);
    if (!base) error = std::string("cannot attach shared memory ") + ours.name + ": " + strerror(errno);
  }
  // Unlink once every local rank has attached (or failed to).
  bootstrap.barrier();
  if (leader && !name.empty()) shm_unlink(name.c_str());

  // Any failure on the node fails every rank of the node alike.
  int failed = error.empty() ? 0 : 1;
  std::vector<int> failures(topo.size);
  bootstrap.allgather(&failed, failures.data(), sizeof(int));
  for (int r : topo.node_ranks[topo.node]) {
    if (failures[r] && error.empty()) error = "shared memory setup failed on rank " + std::to_string(r);
  }
  if (alone) return nullptr;
  if (!error.empty()) {
    if (base) munmap(base, total);
    if (ours.usage) throw UsageError(error + " (host " + topo.hosts[topo.rank] + ")");
    throw TransportError(error + " (host " + topo.hosts[topo.rank] + ")");
  }
  auto* header = static_cast<SegmentHeader*>(base);
  SMDDP_CHECK(header->magic == kMagic && header->total_bytes == total);
  std::unique_ptr<ShmSegment> segment(new ShmSegment(base, total, header->geometry));
  segment->map_channels_of(topo.local_rank);
  return segment;
}

// A channel reuses a cell only every `cells` messages, so pages left to
// their first touch make 16 messages in a row slow at each larger message
// size of a sweep: measured on 2 ranks of one host (a VM) at 8 KiB, the
// first 15 recursive-doubling calls took 45 us, the rest 2. Set up here,
// the first 15 took 13-17 us: what is left is cold cache, as on any host.
// Only this rank's channels: 2(n-1) of the node's n*n.
void ShmSegment::map_channels_of(int me) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t span = geometry_.cells * cell_stride_;
  for (int peer = 0; peer < nranks(); ++peer) {
    if (peer == me) continue;
    // Outgoing: only this rank writes them, and nothing is sent yet.
    std::memset(cell(me, peer, 0), 0, span);
    // Incoming: the peer may be sending already, so map without writing.
    char* in = cell(peer, me, 0);
    auto* first = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(in) / page * page);
    const size_t bytes = round_up(static_cast<size_t>(in + span - first), page);
    if (madvise(first, bytes, MADV_POPULATE_READ) != 0) {  // before Linux 5.14: EINVAL
      for (size_t off = 0; off < bytes; off += page) (void)*static_cast<volatile const char*>(first + off);
    }
  }
}

RankControl& ShmSegment::control(int local) {
  return *reinterpret_cast<RankControl*>(static_cast<char*>(base_) + control_off_ +
                                         local * sizeof(RankControl));
}

ChannelControl& ShmSegment::channel(int from, int to) {
  size_t i = static_cast<size_t>(from) * geometry_.nranks + to;
  return *reinterpret_cast<ChannelControl*>(static_cast<char*>(base_) + channel_off_ +
                                            i * sizeof(ChannelControl));
}

char* ShmSegment::cell(int from, int to, uint64_t index) {
  size_t ch = static_cast<size_t>(from) * geometry_.nranks + to;
  size_t i = ch * geometry_.cells + index % geometry_.cells;
  return static_cast<char*>(base_) + cells_off_ + i * cell_stride_;
}

char* ShmSegment::stage(int local, int buffer) {
  return static_cast<char*>(base_) + slots_off_ + (local * 4 + buffer) * geometry_.slot_bytes;
}

char* ShmSegment::result(int local, int buffer) {
  return static_cast<char*>(base_) + slots_off_ + (local * 4 + 2 + buffer) * geometry_.slot_bytes;
}

}  // namespace smddp
