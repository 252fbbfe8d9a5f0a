// -B's repeats of a row (Sweep::repeat_row) and the comparisons across
// ranks made from every rank's record (Sweep::gather_bitwise); the pieces
// they use are in bitwise.h.
#include <algorithm>
#include <map>
#include <tuple>

#include "sweep/bitwise.h"
#include "sweep/data.h"
#include "sweep/sweep.h"
#include "supervision/watchdog.h"

namespace smddp::bench {

void Sweep::repeat_row(Measurement& m, const DataSpec& spec, void* sendp, void* recvp, size_t send_elements,
                       size_t output_elements, size_t count) {
  Backend& backend = *m.backend;
  Watchdog& watchdog = Watchdog::instance();
  RepeatRecord& b = m.bitwise.emplace();
  const size_t es = dtype_size(spec.dtype);
  b.element_bytes = es;
  const size_t out_bytes = output_elements * es;
  std::vector<char> first;  // repeat 1's output
  std::vector<ElementMismatch> found;
  for (int k = 1; k <= o_.bitwise; ++k) {
    // Poison first, then the inputs: in place, the inputs lie inside the
    // output, and nothing of an earlier repeat may survive into this one.
    buffers_->poison(recvp, out_bytes);
    buffers_->fill_send(spec, rank_, sendp, send_elements);
    watchdog.arm(spec.collective, backend.name(), m.result.bytes);
    backend.run(m.args);
    backend.sync();
    watchdog.disarm();
    b.calls.push_back(backend.engine_calls());
    const char* out = buffers_->output(recvp, out_bytes);
    found.clear();
    uint64_t differ = 0;
    if (k == 1) {
      differ = output_elements > 0 ? find_wrong(spec, rank_, out, count, &found, kBitwiseShown) : 0;
      m.wrong += differ;  // -c's count: the #wrong column
      b.against_expected = differ;
      first.assign(out, out + out_bytes);
    } else {
      differ = compare_elements(first.data(), out, output_elements, es, &found, kBitwiseShown);
      b.against_first_repeat += differ;
    }
    for (const ElementMismatch& e : found) {
      if (b.shown.size() < kBitwiseShown) b.shown.emplace_back(k, e);
    }
    b.digests.push_back(output_digest(out, out_bytes));
    b.differing.push_back(differ);
  }
}

RowBitwise Sweep::gather_bitwise(const Measurement& m) {
  const RepeatRecord& b = *m.bitwise;
  const size_t n = static_cast<size_t>(ctx_.nranks);
  const size_t repeats = static_cast<size_t>(o_.bitwise);
  // Per rank: the two counts, how many shown, each repeat's digest and
  // differing elements, then kBitwiseShown (repeat, element, expected, received).
  const size_t width = 3 + 2 * repeats + 4 * kBitwiseShown;
  std::vector<uint64_t> mine(width, 0);
  mine[0] = b.against_expected;
  mine[1] = b.against_first_repeat;
  mine[2] = b.shown.size();
  for (size_t k = 0; k < repeats; ++k) {
    mine[3 + k] = b.digests[k];
    mine[3 + repeats + k] = b.differing[k];
  }
  for (size_t i = 0; i < b.shown.size(); ++i) {
    uint64_t* e = &mine[3 + 2 * repeats + 4 * i];
    e[0] = static_cast<uint64_t>(b.shown[i].first);
    e[1] = b.shown[i].second.element;
    e[2] = b.shown[i].second.expected;
    e[3] = b.shown[i].second.received;
  }
  std::vector<uint64_t> all(width * n);
  world_.allgather(mine.data(), all.data(), width, DataType::Uint64);
  const auto at = [&](size_t rank) { return &all[rank * width]; };

  RowBitwise out;
  out.repeats = o_.bitwise;
  out.ranks = rank_agreement(m.args.collective);
  out.engine_calls = b.calls;
  for (size_t w = 0; w < n; ++w) {
    const uint64_t* p = at(w);
    out.against_expected += p[0];
    out.against_first_repeat += p[1];
    for (size_t i = 0; i < std::min<uint64_t>(p[2], kBitwiseShown); ++i) {
      const uint64_t* e = p + 3 + 2 * repeats + 4 * i;
      BitDifference d;
      d.against = e[0] == 1 ? BitDifference::Against::Expected : BitDifference::Against::FirstRepeat;
      d.rank = static_cast<int>(w);
      d.host = ctx_.hosts[w];
      d.repeat = static_cast<int>(e[0]);
      d.element = e[1];
      d.bytes = b.element_bytes;
      d.expected = e[2];
      d.received = e[3];
      out.shown.push_back(std::move(d));
    }
  }
  if (out.ranks == RankAgreement::All) {
    // Within each group, per repeat: the output the group agrees on is the
    // one most ranks hold whose comparisons on their own found nothing (a
    // clean rank outvotes a corrupt one, even one of two), then the one most
    // ranks hold, then the lowest rank's. Every other rank differs from it.
    for (const auto& [color, members] : ctx_.group_members()) {
      for (size_t k = 0; k < repeats; ++k) {
        struct Votes {
          size_t clean = 0, holders = 0;
          int lowest = 0;
        };
        std::map<uint64_t, Votes> votes;
        for (int w : members) {
          const uint64_t* p = at(static_cast<size_t>(w));
          Votes& v = votes[p[3 + k]];
          if (v.holders++ == 0) v.lowest = w;
          v.clean += p[3 + repeats] == 0 && p[3 + repeats + k] == 0 ? 1 : 0;
        }
        const auto agreed = std::max_element(votes.begin(), votes.end(), [](const auto& x, const auto& y) {
          return std::tuple(x.second.clean, x.second.holders, -x.second.lowest) <
                 std::tuple(y.second.clean, y.second.holders, -y.second.lowest);
        });
        for (int w : members) {
          const uint64_t digest = at(static_cast<size_t>(w))[3 + k];
          if (digest == agreed->first) continue;
          ++out.against_ranks;
          BitDifference d;
          d.against = BitDifference::Against::Ranks;
          d.rank = w;
          d.host = ctx_.hosts[static_cast<size_t>(w)];
          d.repeat = static_cast<int>(k) + 1;
          d.expected = agreed->first;
          d.received = digest;
          d.agreed_rank = agreed->second.lowest;
          out.shown.push_back(std::move(d));
        }
      }
    }
  }
  std::stable_sort(out.shown.begin(), out.shown.end(), [](const BitDifference& x, const BitDifference& y) {
    return std::tuple(x.rank, x.repeat, static_cast<int>(x.against), x.element) <
           std::tuple(y.rank, y.repeat, static_cast<int>(y.against), y.element);
  });
  if (out.shown.size() > kBitwiseShown) out.shown.resize(kBitwiseShown);
  return out;
}

}  // namespace smddp::bench
