#include "patterns/patterns.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

using namespace smddp::patterns;

TEST(Patterns, RingNeighbours) {
  EXPECT_EQ(ring_next(0, 3), 1);
  EXPECT_EQ(ring_next(2, 3), 0);
  EXPECT_EQ(ring_prev(0, 3), 2);
  EXPECT_EQ(ring_prev(1, 1), 0);
  EXPECT_EQ(mod(-7, 3), 2);
}

TEST(Patterns, Pow2) {
  EXPECT_EQ(pow2_floor(1), 1);
  EXPECT_EQ(pow2_floor(6), 4);
  EXPECT_EQ(pow2_floor(8), 8);
  EXPECT_TRUE(is_pow2(16));
  EXPECT_FALSE(is_pow2(12));
  EXPECT_FALSE(is_pow2(0));
}

TEST(Patterns, BalancedPartitionCoversEverythingOnce) {
  for (size_t total : {0, 1, 7, 10, 1000003}) {
    for (int parts : {1, 2, 3, 4, 7}) {
      auto p = Partition::balanced(total, parts);
      size_t sum = 0;
      for (int i = 0; i < parts; ++i) {
        EXPECT_EQ(p.offset(i), sum) << total << "/" << parts << " block " << i;
        EXPECT_LE(p.length(i), p.max_length());
        EXPECT_GE(p.length(i) + 1, p.max_length());
        sum += p.length(i);
      }
      EXPECT_EQ(sum, total);
      EXPECT_EQ(p.offset(parts), total);
    }
  }
}

TEST(Patterns, EqualPartition) {
  auto p = Partition::equal(5, 3);
  EXPECT_EQ(p.total, 15u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(p.length(i), 5u);
    EXPECT_EQ(p.offset(i), 5u * i);
  }
}

TEST(Patterns, HalvingDoublingFixup) {
  HalvingDoubling hd(6);  // pof2 4, extra 2: ranks 0 and 2 sit out
  EXPECT_EQ(hd.pof2, 4);
  EXPECT_EQ(hd.extra, 2);
  EXPECT_TRUE(hd.sits_out(0));
  EXPECT_FALSE(hd.sits_out(1));
  EXPECT_TRUE(hd.sits_out(2));
  EXPECT_FALSE(hd.sits_out(4));
  EXPECT_EQ(hd.virtual_rank(0), -1);
  EXPECT_EQ(hd.virtual_rank(1), 0);
  EXPECT_EQ(hd.virtual_rank(3), 1);
  EXPECT_EQ(hd.virtual_rank(4), 2);
  EXPECT_EQ(hd.virtual_rank(5), 3);
  for (int v = 0; v < hd.pof2; ++v) EXPECT_EQ(hd.virtual_rank(hd.real_rank(v)), v);
  EXPECT_EQ(hd.fixup_partner(0), 1);
  EXPECT_EQ(hd.fixup_partner(3), 2);
  HalvingDoubling pow2(8);
  EXPECT_EQ(pow2.extra, 0);
  for (int r = 0; r < 8; ++r) EXPECT_EQ(pow2.virtual_rank(r), r);
}

TEST(Patterns, HalvingDoublingPutsNodeMatesFirst) {
  using V = std::vector<int>;
  EXPECT_EQ(HalvingDoubling(8).masks, (V{4, 2, 1}));                        // no nodes: largest first
  EXPECT_EQ(HalvingDoubling(8, {0, 0, 1, 1, 2, 2, 3, 3}).masks, (V{1, 4, 2}));  // 4 nodes of 2, by slot
  EXPECT_EQ(HalvingDoubling(8, {0, 0, 0, 0, 1, 1, 1, 1}).masks, (V{2, 1, 4}));  // 2 nodes of 4
  EXPECT_EQ(HalvingDoubling(8, {0, 1, 2, 3, 0, 1, 2, 3}).masks, (V{4, 2, 1}));  // by node: 4 apart
  EXPECT_EQ(HalvingDoubling(4, {0, 1, 0, 1}).masks, (V{2, 1}));
  // 6 ranks on 2 nodes of 3: virtual ranks 0-3 are real 1, 3, 4, 5; masks 1
  // and 2 each pair two of them on one node, so the tie keeps 2 first.
  EXPECT_EQ(HalvingDoubling(6, {0, 0, 0, 1, 1, 1}).masks, (V{2, 1}));
  EXPECT_TRUE(HalvingDoubling(1).masks.empty());
}

// Every non-root has exactly one parent, parents and children agree, and
// the tree spans all ranks.
TEST(Patterns, BinomialTreeIsConsistent) {
  for (int n : {1, 2, 3, 5, 8, 13}) {
    for (int root : {0, n - 1, n / 2}) {
      std::set<int> reached{root};
      for (int me = 0; me < n; ++me) {
        auto t = binomial_tree(me, root, n);
        if (me == root) {
          EXPECT_EQ(t.parent, -1);
        } else {
          ASSERT_GE(t.parent, 0);
          auto p = binomial_tree(t.parent, root, n);
          EXPECT_NE(std::find(p.children.begin(), p.children.end(), me), p.children.end())
              << "n=" << n << " root=" << root << " me=" << me;
        }
        for (int c : t.children) {
          EXPECT_EQ(binomial_tree(c, root, n).parent, me);
          reached.insert(c);
        }
      }
      EXPECT_EQ(static_cast<int>(reached.size()), n);
    }
  }
  auto t = binomial_tree(0, 0, 5);
  EXPECT_EQ(t.children, (std::vector<int>{4, 2, 1}));
}

// The chain starts at the root, holds every rank once and crosses each
// node boundary once, whatever the placement of the ranks on nodes.
TEST(Patterns, ChainOrderCrossesEachNodeOnce) {
  const std::vector<std::vector<int>> placements = {
      {}, {0, 0, 1, 1}, {0, 1, 0, 1, 0, 1}, {3, 3, 3, 1, 1, 2, 2}, {5}, {0, 0, 0}};
  for (const auto& node_of : placements) {
    const int n = node_of.empty() ? 5 : static_cast<int>(node_of.size());
    for (int root : {0, n - 1, n / 2}) {
      const auto order = chain_order(root, node_of, n);
      ASSERT_EQ(static_cast<int>(order.size()), n);
      EXPECT_EQ(order[0], root);
      EXPECT_EQ(std::set<int>(order.begin(), order.end()).size(), static_cast<size_t>(n));
      if (node_of.empty()) continue;
      std::set<int> nodes{node_of[order[0]]};
      int crossings = 0;
      for (int p = 1; p < n; ++p) {
        if (node_of[order[p]] == node_of[order[p - 1]]) continue;
        ++crossings;
        EXPECT_TRUE(nodes.insert(node_of[order[p]]).second) << "node " << node_of[order[p]] << " entered twice";
      }
      EXPECT_EQ(crossings, static_cast<int>(std::set<int>(node_of.begin(), node_of.end()).size()) - 1);
    }
  }
  EXPECT_EQ(chain_order(2, {0, 1, 0, 1}, 4), (std::vector<int>{2, 0, 1, 3}));
}

// At least kChainMinChunkBytes a chunk, and at most kChainChunksPerHop
// chunks per hop above that.
TEST(Patterns, ChainChunk) {
  EXPECT_EQ(chain_chunk(0, 4, 4), kChainMinChunkBytes / 4);
  EXPECT_EQ(chain_chunk(10, 4, 1), kChainMinChunkBytes / 4);
  EXPECT_EQ(chain_chunk(10, 3, 2), (kChainMinChunkBytes + 2) / 3);
  const size_t big = size_t{16} << 20;
  EXPECT_EQ(chain_chunk(big, 1, 5), big / (kChainChunksPerHop * 4));
  EXPECT_EQ(chain_chunk(big + 1, 1, 5), big / (kChainChunksPerHop * 4) + 1);
  EXPECT_EQ(chain_chunk(big, 8, 4000), kChainMinChunkBytes / 8);
}

TEST(Patterns, PairwiseVisitsEveryPeerOnce) {
  for (int n : {2, 3, 4, 7}) {
    for (int me = 0; me < n; ++me) {
      std::set<int> to, from;
      for (int s = 1; s < n; ++s) {
        int dst = pairwise_send_peer(me, s, n);
        to.insert(dst);
        from.insert(pairwise_recv_peer(me, s, n));
        EXPECT_EQ(pairwise_recv_peer(dst, s, n), me);  // the peer expects us in the same step
      }
      EXPECT_EQ(static_cast<int>(to.size()), n - 1);
      EXPECT_EQ(static_cast<int>(from.size()), n - 1);
      EXPECT_EQ(to.count(me), 0u);
    }
  }
  EXPECT_EQ(dissemination_rounds(1), 0);
  EXPECT_EQ(dissemination_rounds(5), 3);
  EXPECT_EQ(dissemination_rounds(8), 3);
}
