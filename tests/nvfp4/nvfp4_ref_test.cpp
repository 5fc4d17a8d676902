// The NVFP4 codecs and the CPU quantizer against brute-force definitions: every e2m1 code, every
// tie, every e4m3 value and midpoint, saturation, subnormals, the swizzled layout.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "nvfp4/nvfp4_codec.h"
#include "ref/host_tensor.h"
#include "ref/nvfp4_ref.h"

namespace fastinfer {
namespace {

namespace codec = nvfp4::codec;
using ref::HostTensor;

const float kE2m1Values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

// Nearest e2m1 magnitude by exhaustive search, ties to the even code.
std::uint8_t brute_e2m1(float v) {
  const double a = std::fabs(static_cast<double>(v));
  int best = a >= 6.0 ? 7 : 0;  // saturation (and infinities, where every distance is inf)
  for (int c = 1; c < 8 && a < 6.0; ++c) {
    const double d = std::fabs(kE2m1Values[c] - a), db = std::fabs(kE2m1Values[best] - a);
    if (d < db || (d == db && (c % 2 == 0) && (best % 2 == 1))) best = c;
  }
  return static_cast<std::uint8_t>((std::signbit(v) ? 8 : 0) | best);
}

// Nearest finite positive e4m3 value by exhaustive search, ties to even mantissa, satfinite.
std::uint8_t brute_e4m3(float x) {
  const double a = std::fabs(static_cast<double>(x));
  int best = a >= 448.0 ? 0x7e : 0;  // satfinite
  for (int c = 1; c <= 0x7e && a < 448.0; ++c) {
    const double d = std::fabs(codec::e4m3_to_float(static_cast<std::uint8_t>(c)) - a);
    const double db = std::fabs(codec::e4m3_to_float(static_cast<std::uint8_t>(best)) - a);
    if (d < db || (d == db && (c % 2 == 0) && (best % 2 == 1))) best = c;
  }
  return static_cast<std::uint8_t>((std::signbit(x) ? 0x80 : 0) | best);
}

TEST(Nvfp4Codec, E2m1DecodesEveryCode) {
  for (int c = 0; c < 16; ++c) {
    const float expected = (c & 8 ? -1.0f : 1.0f) * kE2m1Values[c & 7];
    EXPECT_EQ(codec::e2m1_to_float(static_cast<std::uint8_t>(c)), expected) << "code " << c;
    EXPECT_EQ(std::signbit(codec::e2m1_to_float(static_cast<std::uint8_t>(c))), c >= 8) << "code " << c;
  }
}

TEST(Nvfp4Codec, E2m1EncodesValuesTiesAndSaturation) {
  std::vector<float> probes;
  for (int c = 0; c < 8; ++c) {
    probes.push_back(kE2m1Values[c]);
    if (c < 7) {
      const float mid = 0.5f * (kE2m1Values[c] + kE2m1Values[c + 1]);
      probes.push_back(mid);
      probes.push_back(std::nextafter(mid, 0.0f));
      probes.push_back(std::nextafter(mid, 10.0f));
    }
  }
  for (float v : {6.5f, 7.0f, 1e30f, std::numeric_limits<float>::infinity(), 1e-30f, 1e-45f}) probes.push_back(v);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(0.0f, 8.0f);
  for (int i = 0; i < 20000; ++i) probes.push_back(dist(rng));
  for (float v : probes) {
    EXPECT_EQ(codec::e2m1_from_float(v), brute_e2m1(v)) << "v=" << v;
    EXPECT_EQ(codec::e2m1_from_float(-v), brute_e2m1(-v)) << "v=" << -v;
  }
  // Explicit ties (round half to even code).
  EXPECT_EQ(codec::e2m1_from_float(0.25f), 0);
  EXPECT_EQ(codec::e2m1_from_float(0.75f), 2);
  EXPECT_EQ(codec::e2m1_from_float(1.25f), 2);
  EXPECT_EQ(codec::e2m1_from_float(1.75f), 4);
  EXPECT_EQ(codec::e2m1_from_float(2.5f), 4);
  EXPECT_EQ(codec::e2m1_from_float(3.5f), 6);
  EXPECT_EQ(codec::e2m1_from_float(5.0f), 6);
  EXPECT_EQ(codec::e2m1_from_float(-5.0f), 0xe);
  EXPECT_EQ(codec::e2m1_from_float(-0.0f), 0x8);
  EXPECT_EQ(codec::e2m1_from_float(NAN), 0x7);
}

TEST(Nvfp4Codec, E4m3DecodesEveryByte) {
  std::set<float> seen;
  for (int b = 0; b < 256; ++b) {
    const float v = codec::e4m3_to_float(static_cast<std::uint8_t>(b));
    if ((b & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(v)) << b;
      continue;
    }
    if (b < 0x80) seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 127u);  // 0x00..0x7e distinct
  EXPECT_EQ(codec::e4m3_to_float(0x7e), 448.0f);
  EXPECT_EQ(codec::e4m3_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(codec::e4m3_to_float(0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(codec::e4m3_to_float(0x38), 1.0f);
}

TEST(Nvfp4Codec, E4m3EncodesValuesMidpointsSubnormalsAndSaturation) {
  std::vector<float> probes;
  for (int b = 0; b < 0x7e; ++b) {
    const float lo = codec::e4m3_to_float(static_cast<std::uint8_t>(b));
    const float hi = codec::e4m3_to_float(static_cast<std::uint8_t>(b + 1));
    const float mid = 0.5f * (lo + hi);
    for (float v : {lo, hi, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1000.0f)}) probes.push_back(v);
  }
  for (float v : {448.0f, 449.0f, 463.9f, 464.0f, 480.0f, 1e30f, std::numeric_limits<float>::infinity(), 1e-30f,
                  std::ldexp(1.0f, -10), std::nextafter(std::ldexp(1.0f, -10), 1.0f), 0.0f})
    probes.push_back(v);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> logu(-12.0f, 9.5f);
  for (int i = 0; i < 20000; ++i) probes.push_back(std::exp2(logu(rng)));
  for (float v : probes) {
    EXPECT_EQ(codec::e4m3_from_float_satfinite(v), brute_e4m3(v)) << "v=" << v;
    EXPECT_EQ(codec::e4m3_from_float_satfinite(-v), brute_e4m3(-v)) << "v=" << -v;
  }
  EXPECT_EQ(codec::e4m3_from_float_satfinite(1e30f), 0x7e);
  EXPECT_EQ(codec::e4m3_from_float_satfinite(std::ldexp(1.0f, -10)), 0x00);         // tie -> even (0)
  EXPECT_EQ(codec::e4m3_from_float_satfinite(3 * std::ldexp(1.0f, -10)), 0x02);     // tie 1.5 -> 2
  EXPECT_EQ(codec::e4m3_from_float_satfinite(NAN), 0x7f);
}

TEST(Nvfp4Codec, SwizzledOffsetsAreABijectionOverThePaddedTile) {
  for (auto [n, blocks] : {std::pair<int, int>{128, 4}, {200, 7}, {256, 12}}) {
    const int n_pad = (n + 127) / 128 * 128, b_pad = (blocks + 3) / 4 * 4, kt = b_pad / 4;
    std::vector<int> hits(static_cast<std::size_t>(n_pad * b_pad), 0);
    for (int r = 0; r < n_pad; ++r)
      for (int b = 0; b < b_pad; ++b) {
        const std::int64_t off = codec::swizzled_offset(r, b, kt);
        ASSERT_GE(off, 0);
        ASSERT_LT(off, n_pad * b_pad);
        hits[static_cast<std::size_t>(off)]++;
      }
    for (int h : hits) EXPECT_EQ(h, 1);
  }
  // Spot values from the formula in DESIGN.md.
  EXPECT_EQ(codec::swizzled_offset(0, 0, 1), 0);
  EXPECT_EQ(codec::swizzled_offset(1, 0, 1), 16);
  EXPECT_EQ(codec::swizzled_offset(32, 0, 1), 4);
  EXPECT_EQ(codec::swizzled_offset(0, 3, 1), 3);
  EXPECT_EQ(codec::swizzled_offset(0, 4, 2), 512);
  EXPECT_EQ(codec::swizzled_offset(128, 0, 2), 1024);
  EXPECT_EQ(codec::swizzled_offset(127, 5, 2), 512 + 31 * 16 + 3 * 4 + 1);
}

// A block with sf == 1 exactly (g = 1, amax = 6): the codes are the plain e2m1 roundings.
TEST(Nvfp4QuantizeRef, HandBuiltBlockHitsEveryTie) {
  HostTensor w(DType::kFloat32, {1, 16});
  const float x[16] = {0.0f, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f,
                       6.0f, -0.25f, -0.75f, -3.0f, -6.0f, 0.5f, 0.3f, -1.5f};
  for (int i = 0; i < 16; ++i) w.set(i, x[i]);
  HostTensor packed(DType::kUInt8, {1, 8}), scales(DType::kUInt8, {1, 1});
  ref::nvfp4_quantize(w, 1.0f, packed, scales, nvfp4::ScaleLayout::kLinear);
  EXPECT_EQ(static_cast<int>(scales.get(0)), 0x38);  // 1.0
  const int expected[16] = {0, 0, 2, 2, 4, 4, 6, 6, 7, 8, 10, 13, 15, 1, 1, 11};
  for (int i = 0; i < 16; ++i) {
    const int byte = static_cast<int>(packed.get(i / 2));
    EXPECT_EQ(i % 2 == 0 ? (byte & 0xf) : (byte >> 4), expected[i]) << "element " << i;
  }
}

TEST(Nvfp4QuantizeRef, ZeroHugeAndTinyBlocks) {
  HostTensor w(DType::kFloat32, {3, 32});
  std::mt19937_64 rng(3);
  w.fill_uniform(rng, -1.0, 1.0);
  for (int i = 0; i < 16; ++i) w.set(i, 0.0);               // all-zero block
  for (int i = 16; i < 32; ++i) w.set(i, 3e38 * (i % 2 ? 1 : -1));  // huge
  for (int i = 32; i < 48; ++i) w.set(i, 1e-30 * (i - 40));  // tiny: scale underflows to 0
  HostTensor packed(DType::kUInt8, {3, 16}), scales(DType::kUInt8, {3, 2});
  const float g = 1.0f;
  ref::nvfp4_quantize(w, g, packed, scales, nvfp4::ScaleLayout::kLinear);
  EXPECT_EQ(scales.get(0), 0);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(packed.get(i), 0);
  EXPECT_EQ(scales.get(1), 0x7e);                            // saturated at 448
  for (int i = 8; i < 16; ++i) EXPECT_EQ(static_cast<int>(packed.get(i)), 0x7f) << i;  // -6, +6
  EXPECT_EQ(scales.get(2), 0);
  for (int i = 16; i < 24; ++i) EXPECT_EQ(static_cast<int>(packed.get(i)) & 0x77, 0) << i;
}

// Random matrices: the dequantized value is within half an e2m1 step of the input (relative to
// the block scale), and the swizzled scales equal the linear ones at the mapped offsets.
TEST(Nvfp4QuantizeRef, RandomRoundTripAndLayoutsAgree) {
  const int n = 200, k = 112;
  HostTensor w(DType::kBFloat16, {n, k});
  std::mt19937_64 rng(4);
  w.fill_uniform(rng, -3.0, 3.0);
  float amax = 0;
  for (std::int64_t i = 0; i < w.numel(); ++i) amax = std::max(amax, static_cast<float>(std::fabs(w.get(i))));
  const float g = nvfp4::global_scale_for(amax);
  HostTensor packed(DType::kUInt8, {n, k / 2}), packed2(DType::kUInt8, {n, k / 2});
  HostTensor lin(DType::kUInt8, {nvfp4::scale_bytes(n, k, nvfp4::ScaleLayout::kLinear)});
  HostTensor swz(DType::kUInt8, {nvfp4::scale_bytes(n, k, nvfp4::ScaleLayout::kSwizzled128x4)});
  ref::nvfp4_quantize(w, g, packed, lin, nvfp4::ScaleLayout::kLinear);
  ref::nvfp4_quantize(w, g, packed2, swz, nvfp4::ScaleLayout::kSwizzled128x4);
  for (std::int64_t i = 0; i < packed.numel(); ++i) ASSERT_EQ(packed.get(i), packed2.get(i));
  std::vector<bool> used(static_cast<std::size_t>(swz.numel()), false);
  for (int r = 0; r < n; ++r)
    for (int b = 0; b < k / 16; ++b) {
      const auto off = ref::nvfp4_scale_index(r, b, k, nvfp4::ScaleLayout::kSwizzled128x4);
      ASSERT_EQ(swz.get(off), lin.get(r * (k / 16) + b));
      used[static_cast<std::size_t>(off)] = true;
    }
  for (std::size_t i = 0; i < used.size(); ++i)
    if (!used[i]) ASSERT_EQ(swz.get(static_cast<std::int64_t>(i)), 0) << "padding byte " << i;
  HostTensor back(DType::kFloat32, {n, k});
  ref::nvfp4_dequantize(packed, lin, nvfp4::ScaleLayout::kLinear, g, back);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < k; ++c) {
      const float s = codec::e4m3_to_float(static_cast<std::uint8_t>(lin.get(r * (k / 16) + c / 16))) / g;
      const double err = std::fabs(back.get(r * k + c) - w.get(r * k + c));
      // Half the widest e2m1 step (2 -> between 4 and 6) plus the e4m3 rounding of the scale.
      ASSERT_LE(err, 1.0 * s + 1e-6) << r << "," << c;
    }
}

}  // namespace
}  // namespace fastinfer
