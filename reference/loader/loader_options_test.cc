// Checks LoaderOptions' JSON form: a round trip keeps every field the
// workers need, and malformed JSON is an error naming the field, never an
// exception (spawned workers parse it from their command line).
#include "reference/loader/loader_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "reference/base/status_matchers.h"

namespace faultline {
namespace {

using testing::HasSubstr;

TEST(LoaderOptionsTest, JsonRoundTripKeepsEveryWorkerField) {
  LoaderOptions o;
  o.graph_dir = "/data/g";
  o.fanouts = {15, 10, 5};
  o.batch_size = 1024;
  o.num_items = 77;
  o.shuffle = false;
  o.drop_last = true;
  o.seed = 0xFFFFFFFFFFFFFFFFull;
  o.replace = true;
  o.weighted = true;
  o.num_workers = 3;  // a worker picks its segment slots by it
  o.sampler_threads = 2;
  o.mode = LoaderMode::kPinnedCuda;
  o.runtime = RuntimeKind::kCuda;
  o.device = 1;
  o.dispatch = Behaviour::kLegacy;
  o.pin_handling = Behaviour::kLegacy;
  FL_ASSERT_OK_AND_ASSIGN(LoaderOptions back, OptionsFromJson(OptionsToJson(o)));
  // Each field against the value set above (none is its default), not the
  // JSON of `back` against the JSON of `o`: a field that both directions
  // dropped would pass that comparison.
  EXPECT_EQ(back.graph_dir, "/data/g");
  EXPECT_EQ(back.fanouts, (std::vector<int64_t>{15, 10, 5}));
  EXPECT_EQ(back.batch_size, 1024);
  EXPECT_EQ(back.num_items, 77);
  EXPECT_FALSE(back.shuffle);
  EXPECT_TRUE(back.drop_last);
  EXPECT_EQ(back.seed, 0xFFFFFFFFFFFFFFFFull);
  EXPECT_TRUE(back.replace);
  EXPECT_TRUE(back.weighted);
  EXPECT_EQ(back.num_workers, 3);
  EXPECT_EQ(back.sampler_threads, 2);
  EXPECT_EQ(back.mode, LoaderMode::kPinnedCuda);
  EXPECT_EQ(back.runtime, RuntimeKind::kCuda);
  EXPECT_EQ(back.device, 1);
  EXPECT_EQ(back.dispatch, Behaviour::kLegacy);
  EXPECT_EQ(back.pin_handling, Behaviour::kLegacy);
}

TEST(LoaderOptionsTest, MalformedJsonIsAnErrorNamingTheField) {
  EXPECT_THAT(OptionsFromJson("not json").status(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not a JSON object")));
  EXPECT_THAT(OptionsFromJson("[1, 2]").status(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not a JSON object")));
  std::string json = OptionsToJson(LoaderOptions{});
  const std::string without_fanouts = json.replace(json.find("\"fanouts\""), 9, "\"fanoutz\"");
  EXPECT_THAT(
      OptionsFromJson(without_fanouts).status(),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("field 'fanouts' is missing or not an array of integers")));
  std::string wrong_type = OptionsToJson(LoaderOptions{});
  wrong_type.replace(wrong_type.find("\"shuffle\":true"), 14, "\"shuffle\":\"yes\"");
  EXPECT_THAT(OptionsFromJson(wrong_type).status(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("field 'shuffle' is missing or not a boolean")));
  std::string bad_mode = OptionsToJson(LoaderOptions{});
  bad_mode.replace(bad_mode.find("\"cpu-cpu\""), 9, "\"gpu-gpu\"");
  EXPECT_THAT(OptionsFromJson(bad_mode).status(), StatusIs(StatusCode::kInvalidArgument, HasSubstr("gpu-gpu")));
}

}  // namespace
}  // namespace faultline
