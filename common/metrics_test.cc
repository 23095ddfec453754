#include "common/metrics.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace common {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsTest, CounterWithLabels) {
  MetricsRegistry registry;
  CounterFamily* requests =
      registry.AddCounter("test_requests_total", "Requests.", {"method", "code"});
  requests->WithLabels({"Get", "OK"})->Increment();
  requests->WithLabels({"Get", "OK"})->Increment(2);
  requests->WithLabels({"Put", "NOT_FOUND"})->Increment();
  EXPECT_EQ(registry.Render(),
            "# HELP test_requests_total Requests.\n"
            "# TYPE test_requests_total counter\n"
            "test_requests_total{method=\"Get\",code=\"OK\"} 3\n"
            "test_requests_total{method=\"Put\",code=\"NOT_FOUND\"} 1\n");
}

TEST(MetricsTest, SameNameGivesTheSameFamily) {
  MetricsRegistry registry;
  CounterFamily* a = registry.AddCounter("test_total", "A.");
  CounterFamily* b = registry.AddCounter("test_total", "B.");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->WithLabels({}), b->WithLabels({}));
}

TEST(MetricsTest, GaugeWithoutLabels) {
  MetricsRegistry registry;
  Gauge* open = registry.AddGauge("test_open", "Open things.")->WithLabels({});
  open->Add(3);
  open->Add(-1);
  EXPECT_EQ(registry.Render(),
            "# HELP test_open Open things.\n# TYPE test_open gauge\ntest_open 2\n");
  open->Set(-7);
  EXPECT_THAT(registry.Render(), HasSubstr("\ntest_open -7\n"));
}

TEST(MetricsTest, FamiliesAreSortedByName) {
  MetricsRegistry registry;
  registry.AddGauge("zeta", "z")->WithLabels({});
  registry.AddCounter("alpha", "a")->WithLabels({});
  const std::string text = registry.Render();
  EXPECT_LT(text.find("alpha"), text.find("zeta")) << text;
}

TEST(MetricsTest, LabelValuesAndHelpAreEscaped) {
  MetricsRegistry registry;
  registry.AddCounter("test_total", "Help with a \\ backslash\nand a newline \"quoted\".", {"v"})
      ->WithLabels({"a\\b \"c\"\nd"})
      ->Increment();
  const std::string text = registry.Render();
  // Help: backslash and newline escaped, the double quote kept.
  EXPECT_THAT(
      text,
      HasSubstr("# HELP test_total Help with a \\\\ backslash\\nand a newline \"quoted\".\n"));
  // Label value: backslash, double quote and newline escaped.
  EXPECT_THAT(text, HasSubstr("test_total{v=\"a\\\\b \\\"c\\\"\\nd\"} 1\n"));
  // Every line ends where a line should: no raw newline inside a value.
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    EXPECT_TRUE(absl::StartsWith(line, "#") || absl::StartsWith(line, "test_total{")) << line;
  }
}

TEST(MetricsTest, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(EscapeLabelValue("ok\xff\xfe"), "ok\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(EscapeLabelValue("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(EscapeLabelValue("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");  // overlong '/'
  EXPECT_EQ(EscapeLabelValue("\xed\xa0\x80"),
            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");                    // a surrogate
  EXPECT_EQ(EscapeLabelValue("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");  // cut short
  EXPECT_EQ(EscapeHelp(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(MetricsTest, HistogramBucketsAreCumulativeWithSumAndCount) {
  MetricsRegistry registry;
  Histogram* latency = registry.AddHistogram("test_seconds", "Latency.", {"method"}, {0.1, 1, 10})
                           ->WithLabels({"Get"});
  latency->Observe(0.05);
  latency->Observe(0.1);  // "le" is inclusive: still the first bucket
  latency->Observe(0.5);
  latency->Observe(20);
  EXPECT_EQ(registry.Render(),
            "# HELP test_seconds Latency.\n"
            "# TYPE test_seconds histogram\n"
            "test_seconds_bucket{method=\"Get\",le=\"0.1\"} 2\n"
            "test_seconds_bucket{method=\"Get\",le=\"1\"} 3\n"
            "test_seconds_bucket{method=\"Get\",le=\"10\"} 3\n"
            "test_seconds_bucket{method=\"Get\",le=\"+Inf\"} 4\n"
            "test_seconds_sum{method=\"Get\"} 20.65\n"
            "test_seconds_count{method=\"Get\"} 4\n");
}

TEST(MetricsTest, HistogramWithoutLabelsAndUnsortedBounds) {
  MetricsRegistry registry;
  Histogram* h = registry.AddHistogram("test_h", "H.", {}, {5, 1, 1, 2})->WithLabels({});
  EXPECT_EQ(h->bounds(), (std::vector<double>{1, 2, 5}));
  h->Observe(3);
  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("test_h_bucket{le=\"2\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("test_h_bucket{le=\"5\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("test_h_sum 3\n"));
  EXPECT_THAT(text, HasSubstr("test_h_count 1\n"));
}

TEST(MetricsTest, ConcurrentRecordingLosesNothing) {
  MetricsRegistry registry;
  CounterFamily* counters = registry.AddCounter("test_total", "T.", {"k"});
  HistogramFamily* histograms = registry.AddHistogram("test_seconds", "T.", {}, LatencyBuckets());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        counters->WithLabels({"a"})->Increment();
        histograms->WithLabels({})->Observe(0.5);
        if (i % 1000 == 0) (void)registry.Render();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counters->WithLabels({"a"})->value(), 40000u);
  EXPECT_EQ(histograms->WithLabels({})->count(), 40000u);
  EXPECT_DOUBLE_EQ(histograms->WithLabels({})->sum(), 20000);
}

TEST(MetricsTest, CallbacksRunAtScrapeTimeUntilRemoved) {
  MetricsRegistry registry;
  int calls = 0;
  const uint64_t id =
      registry.AddCallback(MetricType::kGauge, "test_live_bytes", "Live bytes.", {"cf"}, [&calls] {
        ++calls;
        return std::vector<CallbackSample>{{{"default"}, 1.5e9}, {{"a\"b"}, 0.25}};
      });
  const std::string text = registry.Render();
  EXPECT_EQ(calls, 1);
  EXPECT_THAT(text, HasSubstr("# TYPE test_live_bytes gauge\n"));
  EXPECT_THAT(text, HasSubstr("test_live_bytes{cf=\"default\"} 1500000000\n"));
  EXPECT_THAT(text, HasSubstr("test_live_bytes{cf=\"a\\\"b\"} 0.25\n"));
  registry.RemoveCallback(id);
  EXPECT_THAT(registry.Render(), Not(HasSubstr("test_live_bytes")));
  EXPECT_EQ(calls, 1);
}

TEST(MetricsTest, WrongNumberOfLabelValuesDoesNotCrash) {
  MetricsRegistry registry;
  CounterFamily* f = registry.AddCounter("test_total", "T.", {"a", "b"});
  f->WithLabels({"only-one"})->Increment();
  f->WithLabels({"x", "y", "z"})->Increment();
  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("test_total{a=\"only-one\",b=\"\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("test_total{a=\"x\",b=\"y\"} 1\n"));
}

TEST(MetricsTest, ValuesInTheTextFormat) {
  EXPECT_EQ(FormatMetricValue(0), "0");
  EXPECT_EQ(FormatMetricValue(42), "42");
  EXPECT_EQ(FormatMetricValue(-3), "-3");
  EXPECT_EQ(FormatMetricValue(0.1), "0.1");
  EXPECT_EQ(FormatMetricValue(0.0025), "0.0025");
  EXPECT_EQ(FormatMetricValue(1e20), "1e+20");
  EXPECT_EQ(FormatMetricValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatMetricValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatMetricValue(std::nan("")), "NaN");
  const double third = 1.0 / 3;
  EXPECT_EQ(std::strtod(FormatMetricValue(third).c_str(), nullptr), third);
}

}  // namespace
}  // namespace common
