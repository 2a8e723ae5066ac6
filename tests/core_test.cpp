#include <gtest/gtest.h>

#include <limits>

#include <cmath>
#include <set>
#include <string>

#include "core/error.hpp"
#include "core/ids.hpp"
#include "core/rng.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"
#include "core/units.hpp"

namespace twin::core {
namespace {

TEST(StrongId, DefaultIsInvalidAndIdsCompare) {
  NodeId none;
  EXPECT_FALSE(none.valid());
  EXPECT_TRUE(NodeId(3).valid());
  EXPECT_LT(NodeId(2), NodeId(3));
  EXPECT_EQ(LinkId::from_index(7).index(), 7u);
  static_assert(!std::is_convertible_v<NodeId, LinkId>, "ids of different kinds must not mix");
}

TEST(Units, LineRateToBytes) {
  // 400 Gb/s NDR carries 50 GB/s of raw line rate.
  EXPECT_DOUBLE_EQ(gbps_to_Bps(400.0), 50e9);
  EXPECT_DOUBLE_EQ(Bps_to_GBps(gbps_to_Bps(200.0)), 25.0);
  EXPECT_EQ(kGiB, 1073741824u);
}

TEST(Error, KindTravelsWithTheError) {
  EXPECT_EQ(Error("fabric.tiers", "5", "must be 2 or 3").kind(), Error::Kind::input);
  const Error e(Error::Kind::not_supported, "algorithm", "nvls", "one NVSwitch domain only");
  EXPECT_EQ(e.in_file("a.yaml").kind(), Error::Kind::not_supported);
  EXPECT_EQ(e.in_file("a.yaml").file(), "a.yaml");
}

TEST(Rng, SameSeedSameSequence) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const auto x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    differs |= x != c.next_u64();
  }
  EXPECT_TRUE(differs);
}

TEST(Rng, SplitStreamsAreIndependentAndReproducible) {
  const Rng base(7);
  Rng s1 = base.split(1), s1_again = base.split(1), s2 = base.split(2);
  EXPECT_EQ(s1.next_u64(), s1_again.next_u64());
  EXPECT_NE(base.split(1).next_u64(), s2.next_u64());
}

TEST(Rng, DistributionsHaveTheirMeans) {
  Rng rng(2024);
  const int n = 200000;
  double uniform_sum = 0, exp_sum = 0, weibull_sum = 0;
  for (int i = 0; i < n; ++i) {
    const double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    uniform_sum += u;
    exp_sum += rng.exponential(4.0);
    weibull_sum += rng.weibull(0.5, 1.0);
  }
  EXPECT_NEAR(uniform_sum / n, 0.5, 0.005);
  EXPECT_NEAR(exp_sum / n, 0.25, 0.005);  // mean 1/rate
  // Weibull mean = scale * Gamma(1 + 1/shape) = Gamma(3) = 2 for shape 0.5.
  EXPECT_NEAR(weibull_sum / n, 2.0, 0.05);
}

TEST(Rng, UniformIndexCoversRangeWithoutBias) {
  Rng rng(1);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 30000; ++i) ++counts[rng.uniform_index(3)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);
  EXPECT_THROW(rng.uniform_index(0), std::invalid_argument);
}

TEST(Error, MessageNamesFileFieldValueAndReason) {
  const Error e("fabric.tiers", "4", "must be 2 or 3", "my.yaml");
  EXPECT_STREQ(e.what(), "my.yaml: fabric.tiers = 4: must be 2 or 3");
  EXPECT_EQ(e.field(), "fabric.tiers");
  const Error no_file("cluster.nodes", "0", "must be positive");
  EXPECT_EQ(std::string(no_file.in_file("x.yaml").what()),
            "x.yaml: cluster.nodes = 0: must be positive");
}

TEST(Text, SuggestsCloseNames) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(closest_match("tier", {"tiers", "switch_radix", "routing"}), "tiers");
  EXPECT_EQ(closest_match("zzzzzz", {"tiers", "routing"}), "");
  EXPECT_EQ(did_you_mean("routng", {"routing"}), " (did you mean 'routing'?)");
}

TEST(Text, ThousandsSeparators) {
  EXPECT_EQ(with_commas(12288), "12,288");
  EXPECT_EQ(with_commas(999), "999");
  EXPECT_EQ(with_commas(1000000), "1,000,000");
  EXPECT_EQ(with_commas(-1234567), "-1,234,567");
  // The most negative int64 has no positive counterpart: printed without overflow.
  EXPECT_EQ(with_commas(std::numeric_limits<std::int64_t>::min()), "-9,223,372,036,854,775,808");
  EXPECT_EQ(with_commas(-4096), "-4,096");
}

// The trimmed mean keeps the smaller ceil(n / 2) values whatever the larger half holds, and, unlike
// the median, moves with every one of them.
TEST(Stats, MeanOfTheSmallerHalfIgnoresTheLargerHalf) {
  EXPECT_DOUBLE_EQ(mean_of_smaller_half({}), 0.0);
  EXPECT_DOUBLE_EQ(mean_of_smaller_half({7}), 7.0);
  EXPECT_DOUBLE_EQ(mean_of_smaller_half({9, 1, 100, 2, 3}), 2.0);  // 1, 2, 3
  EXPECT_DOUBLE_EQ(mean_of_smaller_half({9, 1, 1e9, 2, 3}), 2.0);  // the outlier is dropped
  EXPECT_DOUBLE_EQ(mean_of_smaller_half({4, 1, 3, 2}), 1.5);       // 1, 2
  EXPECT_DOUBLE_EQ(median({9, 0.5, 100, 2, 3}), median({9, 1, 100, 2, 3}));  // 3 both times
  EXPECT_DOUBLE_EQ(mean_of_smaller_half({9, 0.5, 100, 2, 3}), 5.5 / 3);
}

}  // namespace
}  // namespace twin::core
