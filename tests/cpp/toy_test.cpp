// The playground's toy tasks and trainer: each generator's sequences checked against the task's
// definition (written here independently), seeding, and the behaviour the page promises (copy
// learned in a few hundred steps; on balanced-key one head stays near chance while two solve it).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "training/toy_trainer.h"

namespace {

mh::ToyBatch batch_of(mh::ToyTask task, int count, uint64_t seed) {
  mh::ToyBatch b;
  uint64_t rng = seed;
  mh::make_toy_batch(b, task, count, rng);
  return b;
}

// prompt | answer: the prompt (symbols), the answer (targets from the separator on).
void split(const mh::ToyBatch& b, int s, std::vector<int>& prompt, std::vector<int>& answer) {
  const int k = b.seq / 2;
  prompt.assign(b.tokens.begin() + s * b.seq, b.tokens.begin() + s * b.seq + k);
  answer.assign(b.targets.begin() + s * b.seq + k, b.targets.begin() + (s + 1) * b.seq);
  EXPECT_EQ(b.tokens[s * b.seq + k], mh::kToySeparator);
  for (int i = 0; i < k; ++i) {
    EXPECT_EQ(b.targets[s * b.seq + i], -1) << "the prompt is not scored";
    if (i + 1 < k) EXPECT_EQ(b.tokens[s * b.seq + k + 1 + i], answer[i]) << "teacher forcing";
  }
}

}  // namespace

TEST(ToyTasks, CopyReverseSortAnswers) {
  std::vector<int> prompt, answer;
  for (mh::ToyTask task : {mh::ToyTask::copy, mh::ToyTask::reverse, mh::ToyTask::sort}) {
    const mh::ToyBatch b = batch_of(task, 50, 7);
    for (int s = 0; s < b.batch; ++s) {
      split(b, s, prompt, answer);
      for (int x : prompt) ASSERT_TRUE(x >= 0 && x < mh::kToySymbols);
      std::vector<int> expected = prompt;
      if (task == mh::ToyTask::reverse) std::reverse(expected.begin(), expected.end());
      if (task == mh::ToyTask::sort) std::sort(expected.begin(), expected.end());
      EXPECT_EQ(answer, expected) << mh::toy_task_shape(task).name;
    }
  }
}

TEST(ToyTasks, PreviousTokenAsksForThePredecessor) {
  const mh::ToyBatch b = batch_of(mh::ToyTask::previous_token, 100, 8);
  for (int s = 0; s < b.batch; ++s) {
    const int32_t* t = b.tokens.data() + s * b.seq;
    const int32_t* y = b.targets.data() + s * b.seq;
    const int n = b.seq - 2;
    EXPECT_EQ(std::set<int>(t, t + n).size(), size_t(n)) << "distinct symbols";
    EXPECT_EQ(t[n], mh::kToyQuery);
    const int asked = static_cast<int>(std::find(t, t + n, t[n + 1]) - t);
    ASSERT_GT(asked, 0) << "the asked symbol appears after the first place";
    ASSERT_LT(asked, n);
    EXPECT_EQ(y[n + 1], t[asked - 1]);
    for (int i = 0; i <= n; ++i) EXPECT_EQ(y[i], -1);
  }
}

TEST(ToyTasks, BalancedKeyIsTheMidpointAndBestOnItsWeakerCriterion) {
  const mh::ToyBatch b = batch_of(mh::ToyTask::balanced_key, 200, 9);
  ASSERT_EQ(b.features, 2);
  for (int s = 0; s < b.batch; ++s) {
    const int32_t* t = b.tokens.data() + s * b.seq;
    const float* f = b.feature_values.data() + s * b.seq * 2;
    const int keys = b.seq - 1;
    EXPECT_EQ(t[keys], mh::kToyQuery);
    const int answer = b.targets[s * b.seq + keys];
    int at = -1;
    double best_min = -1;
    int best = -1;
    for (int k = 0; k < keys; ++k) {
      if (t[k] == answer) at = k;
      const double weaker = std::min(f[2 * k], f[2 * k + 1]);
      if (weaker > best_min) { best_min = weaker; best = k; }
    }
    ASSERT_GE(at, 0) << "the answer is one of the keys";
    EXPECT_EQ(best, at) << "the answer is the key whose weaker criterion is highest";
    // The other two keys: the answer's criteria are their mean, so a linear score cannot rank it first.
    const int o1 = (at + 1) % keys, o2 = (at + 2) % keys;
    for (int c = 0; c < 2; ++c) EXPECT_NEAR(f[2 * at + c], 0.5 * (f[2 * o1 + c] + f[2 * o2 + c]), 1e-6);
    EXPECT_EQ(std::set<int>(t, t + keys).size(), size_t(keys)) << "distinct labels";
  }
}

TEST(ToyTrainer, ValidationSaysWhatToChange) {
  mh::ToyTrainerSettings s;
  s.heads = 3;
  EXPECT_NE(mh::validate_toy_trainer_settings(s).find("divisible"), std::string::npos);
  s = {};
  s.layers = 3;
  EXPECT_NE(mh::validate_toy_trainer_settings(s).find("layers"), std::string::npos);
  s = {};
  s.learning_rate = 0;
  EXPECT_NE(mh::validate_toy_trainer_settings(s).find("learning rate"), std::string::npos);
  s = {};
  EXPECT_EQ(mh::validate_toy_trainer_settings(s), "");
}

TEST(ToyTrainer, SameSeedSameRunOtherSeedOtherRun) {
  mh::ToyTrainerSettings s;
  s.d_model = 16;
  mh::ToyTrainer a(s), b(s);
  s.seed = 2;
  mh::ToyTrainer c(s);
  for (int i = 0; i < 5; ++i) {
    const double la = a.step(), lb = b.step(), lc = c.step();
    EXPECT_EQ(la, lb);
    EXPECT_NE(la, lc);
  }
  EXPECT_EQ(a.model().params(), b.model().params());
  EXPECT_EQ(a.steps(), 5);
}

TEST(ToyTrainer, CopyIsLearnedInAFewHundredSteps) {
  mh::ToyTrainer trainer(mh::ToyTrainerSettings{});  // the playground's default
  const double before = trainer.evaluate().accuracy;
  for (int i = 0; i < 400; ++i) trainer.step();
  const mh::ToyTrainer::Evaluation after = trainer.evaluate();
  EXPECT_LT(before, 0.3);
  EXPECT_GT(after.accuracy, 0.99);
  RecordProperty("copy accuracy after 400 steps", std::to_string(after.accuracy));
}

TEST(ToyTrainer, BalancedKeyNeedsTwoHeads) {
  // The playground's side-by-side: 1 layer, d_model 32, learning rate 1e-3, seed 1.
  auto accuracy_after = [](int heads, int steps) {
    mh::ToyTrainerSettings s;
    s.task = mh::ToyTask::balanced_key;
    s.layers = 1;
    s.heads = heads;
    s.learning_rate = 1e-3f;
    mh::ToyTrainer trainer(s);
    for (int i = 0; i < steps; ++i) trainer.step();
    return trainer.evaluate().accuracy;
  };
  const double one = accuracy_after(1, 1500), two = accuracy_after(2, 1500);
  RecordProperty("one head", std::to_string(one));
  RecordProperty("two heads", std::to_string(two));
  EXPECT_LT(one, 0.6);  // chance is 1/3
  EXPECT_GT(two, 0.9);
}
