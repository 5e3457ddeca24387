// mh_train: trains the page's small language model on a text corpus, natively (see docs/pages.md,
// "The trained model"). One run: build the vocabulary, train with Adam, evaluate against unigram
// and bigram baselines, measure every head, write a checkpoint, the .mhlm model and a JSON report.
//
//   mh_train --corpus austen.txt --out build/train [--steps 4000] [--resume] [--export model.mhlm]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "nn/decoder.h"
#include "interpret/head_metrics.h"
#include "core/init.h"
#include "nn/layers.h"
#include "io/model_file.h"
#include "io/tokenizer.h"

using namespace mh;

namespace {

struct Options {
  std::string corpus, out = "build/train", export_path, report_path;
  int steps = 4000, batch = 32, seq = 128, vocab = 4096, d_model = 128, heads = 4, layers = 2;
  int d_ff = 0, eval_every = 250, warmup = 200, threads = 0, copy_steps = 0;
  float lr = 3e-3f, repeat_share = 0.5f, random_share = 0.0f, weight_decay = 0.0f;
  uint64_t seed = 1;
  bool resume = false;
};

[[noreturn]] void usage(const char* problem) {
  std::fprintf(stderr, "mh_train: %s\nusage: mh_train --corpus FILE [--out DIR] [--steps N] "
               "[--batch B] [--seq T] [--vocab V] [--d-model D] [--heads H] [--layers L] [--d-ff F] "
               "[--lr X] [--repeat-share P] [--random-share P] [--copy-steps N] [--seed S] [--eval-every N] [--threads N] [--resume] "
               "[--export FILE.mhlm] [--report FILE.json]\n", problem);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  std::map<std::string, int*> ints{{"--steps", &o.steps}, {"--batch", &o.batch}, {"--seq", &o.seq},
      {"--vocab", &o.vocab}, {"--d-model", &o.d_model}, {"--heads", &o.heads},
      {"--layers", &o.layers}, {"--d-ff", &o.d_ff}, {"--eval-every", &o.eval_every},
      {"--warmup", &o.warmup}, {"--threads", &o.threads}, {"--copy-steps", &o.copy_steps}};
  std::map<std::string, float*> floats{{"--lr", &o.lr}, {"--repeat-share", &o.repeat_share},
      {"--random-share", &o.random_share},
      {"--weight-decay", &o.weight_decay}};
  std::map<std::string, std::string*> strings{{"--corpus", &o.corpus}, {"--out", &o.out},
      {"--export", &o.export_path}, {"--report", &o.report_path}};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--resume") { o.resume = true; continue; }
    if (i + 1 >= argc) usage(("missing value after " + a).c_str());
    const char* v = argv[++i];
    if (ints.count(a)) *ints[a] = std::atoi(v);
    else if (floats.count(a)) *floats[a] = static_cast<float>(std::atof(v));
    else if (strings.count(a)) *strings[a] = v;
    else if (a == "--seed") o.seed = std::strtoull(v, nullptr, 10);
    else usage(("unknown option " + a).c_str());
  }
  if (o.corpus.empty()) usage("--corpus is required");
  return o;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) usage(("cannot read " + path).c_str());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Checkpoint: everything needed to continue exactly where a run stopped.
struct Checkpoint {
  int64_t step = 0;
  uint64_t rng = 0;
  double seconds = 0;
  std::vector<float> params, m, v;
};
void save_checkpoint(const std::string& path, const Checkpoint& c) {
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary);
  const int64_t count = static_cast<int64_t>(c.params.size());
  out.write("MHCK", 4);
  out.write(reinterpret_cast<const char*>(&c.step), 8);
  out.write(reinterpret_cast<const char*>(&c.rng), 8);
  out.write(reinterpret_cast<const char*>(&c.seconds), 8);
  out.write(reinterpret_cast<const char*>(&count), 8);
  for (const auto* v : {&c.params, &c.m, &c.v})
    out.write(reinterpret_cast<const char*>(v->data()), count * 4);
  out.close();
  std::rename(tmp.c_str(), path.c_str());  // a crash mid-write never leaves a torn checkpoint
}
bool load_checkpoint(const std::string& path, Checkpoint& c, int64_t expected) {
  std::ifstream in(path, std::ios::binary);
  char magic[4];
  int64_t count = 0;
  if (!in.read(magic, 4) || std::memcmp(magic, "MHCK", 4) != 0) return false;
  in.read(reinterpret_cast<char*>(&c.step), 8);
  in.read(reinterpret_cast<char*>(&c.rng), 8);
  in.read(reinterpret_cast<char*>(&c.seconds), 8);
  in.read(reinterpret_cast<char*>(&count), 8);
  if (count != expected) return false;
  for (auto* v : {&c.params, &c.m, &c.v}) {
    v->resize(count);
    in.read(reinterpret_cast<char*>(v->data()), count * 4);
  }
  return static_cast<bool>(in);
}

// Baselines on the validation tokens: unigram and bigram (interpolated with the unigram, the
// weight chosen on validation, which flatters the baseline) from training counts, add-one smoothed.
struct Baselines { double unigram = 0, bigram = 0; };
Baselines baselines(const std::vector<int32_t>& train, const std::vector<int32_t>& val, int V) {
  std::vector<double> uni(V, 1.0);
  std::map<std::pair<int32_t, int32_t>, double> bi;
  std::vector<double> context_count(V, 0.0);
  for (size_t i = 0; i < train.size(); ++i) {
    uni[train[i]] += 1;
    if (i + 1 < train.size()) { bi[{train[i], train[i + 1]}] += 1; context_count[train[i]] += 1; }
  }
  double total = 0;
  for (double c : uni) total += c;
  Baselines b;
  for (size_t i = 1; i < val.size(); ++i) b.unigram -= std::log(uni[val[i]] / total);
  b.unigram /= double(val.size() - 1);
  b.bigram = 1e9;
  for (double lambda : {0.5, 0.6, 0.7, 0.8, 0.9, 0.95}) {
    double loss = 0;
    for (size_t i = 1; i < val.size(); ++i) {
      const auto it = bi.find({val[i - 1], val[i]});
      const double c = it == bi.end() ? 0 : it->second;
      const double pb = context_count[val[i - 1]] > 0 ? c / context_count[val[i - 1]] : 0;
      loss -= std::log(lambda * pb + (1 - lambda) * uni[val[i]] / total);
    }
    b.bigram = std::min(b.bigram, loss / double(val.size() - 1));
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.threads > 0) omp_set_num_threads(o.threads);
  std::system(("mkdir -p '" + o.out + "'").c_str());

  // ---- data: vocabulary, tokens, a train/validation split by chunks of 4096 tokens (smaller for a
  // small corpus), 1 chunk in 20 held out
  const std::string text = read_file(o.corpus);
  const Tokenizer tokenizer(Tokenizer::build_vocab(text, o.vocab));
  const std::vector<int32_t> all = tokenizer.encode(text);
  const size_t chunk = std::max<size_t>(o.seq + 1, std::min<size_t>(4096, all.size() / 40));
  std::vector<int32_t> train, val;
  int64_t unknown = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    ((i / chunk) % 20 == 19 ? val : train).push_back(all[i]);
    unknown += all[i] == Tokenizer::kUnknown;
  }
  if (val.size() < size_t(o.seq) + 1 || train.size() < size_t(o.seq) + 1)
    usage("the corpus is too small for this --seq: it needs at least 20 chunks of seq + 1 tokens");
  std::printf("corpus: %zu bytes, %zu tokens (%.2f%% unknown), vocab %d; train %zu, validation %zu\n",
              text.size(), all.size(), 100.0 * unknown / all.size(), tokenizer.size(), train.size(),
              val.size());

  DecoderConfig config;
  config.vocab = tokenizer.size();
  config.d_model = o.d_model;
  config.num_heads = o.heads;
  config.layers = o.layers;
  config.context = o.seq;
  config.d_ff = o.d_ff;
  const std::string problem = validate_decoder_config(config);
  if (!problem.empty()) usage(problem.c_str());
  Decoder model(config);
  model.init(o.seed);
  const int64_t P = model.layout().total;
  std::printf("model: %d layers × %d heads, d_model %d, d_ff %d, context %d: %lld parameters\n",
              config.layers, config.num_heads, config.d_model, config.d_ff, config.context,
              static_cast<long long>(P));

  Checkpoint ck;
  ck.rng = o.seed * 0x2545F4914F6CDD1Dull + 1;
  ck.m.assign(P, 0.0f);
  ck.v.assign(P, 0.0f);
  const std::string ck_path = o.out + "/checkpoint.bin";
  if (o.resume && load_checkpoint(ck_path, ck, P)) {
    model.params() = ck.params;
    std::printf("resumed from %s at step %lld\n", ck_path.c_str(), static_cast<long long>(ck.step));
  }

  const int B = o.batch, T = o.seq;
  std::vector<int32_t> window(T + 1), tokens(int64_t{B} * T), targets(int64_t{B} * T);
  std::vector<float> grads(P);
  DecoderCache cache;
  // Fixed validation batches: evenly spaced windows of plain text (no repeated spans).
  const int val_batches = 8;
  std::vector<int32_t> val_tokens(int64_t{val_batches} * B * T), val_targets(val_tokens.size());
  for (int64_t s = 0; s < int64_t{val_batches} * B; ++s) {
    const int64_t start = (static_cast<int64_t>(val.size()) - T - 1) * s / (val_batches * B);
    for (int t = 0; t < T; ++t) {
      val_tokens[s * T + t] = val[start + t];
      val_targets[s * T + t] = val[start + t + 1];
    }
  }
  auto validation_loss = [&]() {
    double loss = 0;
    for (int b = 0; b < val_batches; ++b)
      loss += model.forward(cache, val_tokens.data() + int64_t{b} * B * T,
                            val_targets.data() + int64_t{b} * B * T, B, T);
    return loss / val_batches;
  };
  auto report_heads = [&]() {
    const auto scores = measure_heads(model, val.data(), val.size(), T, 16, 7);
    float best_prev = 0, best_induction = 0;
    for (const HeadScores& s : scores) {
      best_prev = std::max(best_prev, s.previous_token);
      best_induction = std::max(best_induction, s.induction);
    }
    std::printf("  heads: best previous-token %.3f, best induction %.3f\n", best_prev, best_induction);
    return scores;
  };

  if (ck.step == 0) std::printf("step 0: validation %.3f\n", validation_loss());

  AdamSettings adam;
  adam.weight_decay = o.weight_decay;
  const auto started = std::chrono::steady_clock::now();
  const double seconds_before = ck.seconds;
  double running = 0;
  int running_count = 0;
  for (int64_t step = ck.step; step < o.steps; ++step) {
    // ---- a batch: random windows; a share of them get a span copied later in the same window
    for (int b = 0; b < B; ++b) {
      const int64_t start = splitmix64(ck.rng) % (train.size() - T - 1);
      std::copy(train.begin() + start, train.begin() + start + T + 1, window.begin());
      // The first copy_steps steps are all random repeated sequences: a curriculum that lets the
      // induction circuit form before the text competes for the heads.
      const float random_share = step < o.copy_steps ? 1.0f : o.random_share;
      if ((splitmix64(ck.rng) % 1000) < random_share * 1000) {
        // A segment of random tokens repeated to fill the window: only copying predicts the
        // repeats. Its length varies (8 … T/2), so no fixed look-back offset can stand in for
        // matching content (a fixed period let a purely positional head fake induction).
        const int period = 8 + static_cast<int>(splitmix64(ck.rng) % (T / 2 - 8 + 1));
        for (int t = 0; t < period; ++t) window[t] = 1 + static_cast<int32_t>(splitmix64(ck.rng) % (config.vocab - 1));
        for (int t = period; t <= T; ++t) window[t] = window[t - period];
      } else if ((splitmix64(ck.rng) % 1000) < o.repeat_share * 1000) {
        const int span = 8 + static_cast<int>(splitmix64(ck.rng) % std::max(1, (T + 1) / 3 - 8));
        const int from = static_cast<int>(splitmix64(ck.rng) % (T + 1 - 2 * span + 1));
        const int to = from + span + static_cast<int>(splitmix64(ck.rng) % (T + 1 - 2 * span - from + 1));
        std::copy(window.begin() + from, window.begin() + from + span, window.begin() + to);
      }
      std::copy(window.begin(), window.begin() + T, tokens.begin() + int64_t{b} * T);
      std::copy(window.begin() + 1, window.end(), targets.begin() + int64_t{b} * T);
    }
    const double loss = model.forward(cache, tokens.data(), targets.data(), B, T);
    std::fill(grads.begin(), grads.end(), 0.0f);
    model.backward(grads.data(), cache, tokens.data(), targets.data());
    // Clip the global gradient norm at 1, then Adam with warm-up and cosine decay to 10%.
    double norm = 0;
    for (float g : grads) norm += double{g} * g;
    norm = std::sqrt(norm);
    if (norm > 1.0) for (float& g : grads) g = static_cast<float>(g / norm);
    const double progress = double(step) / std::max(1, o.steps);
    adam.lr = o.lr * static_cast<float>(step < o.warmup ? double(step + 1) / o.warmup
                                        : 0.1 + 0.45 * (1 + std::cos(M_PI * progress)));
    adam_update(model.params().data(), ck.m.data(), ck.v.data(), grads.data(), P, step + 1, adam);
    running += loss;
    ++running_count;

    const bool last = step + 1 == o.steps;
    if ((step + 1) % o.eval_every == 0 || last) {
      ck.step = step + 1;
      ck.seconds = seconds_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::printf("step %lld: train loss %.3f, validation %.3f, lr %.2g, %.0f tokens/s, %.0f s\n",
                  static_cast<long long>(step + 1), running / running_count, validation_loss(),
                  adam.lr, double(ck.step) * B * T / ck.seconds, ck.seconds);
      running = 0;
      running_count = 0;
      report_heads();
      ck.params = model.params();
      save_checkpoint(ck_path, ck);
      std::fflush(stdout);
    }
  }

  // ---- final evaluation and the report
  const double val_loss = validation_loss();
  const Baselines base = baselines(train, val, config.vocab);
  const auto scores = report_heads();
  const RepeatLoss repeat = repeated_sequence_loss(model, T, 16, 11);
  std::printf("validation loss %.3f nats/token (unigram %.3f, bigram %.3f); repeated random "
              "tokens: first copy %.2f, second copy %.2f\n",
              val_loss, base.unigram, base.bigram, repeat.first_copy, repeat.second_copy);
  if (!o.export_path.empty()) {
    const std::vector<uint8_t> bytes = save_model(model, tokenizer);
    std::ofstream(o.export_path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    std::printf("wrote %s (%zu bytes)\n", o.export_path.c_str(), bytes.size());
  }
  const std::string report = o.report_path.empty() ? o.out + "/report.json" : o.report_path;
  std::ofstream js(report);
  js << "{\n  \"config\": {\"vocab\": " << config.vocab << ", \"d_model\": " << config.d_model
     << ", \"num_heads\": " << config.num_heads << ", \"layers\": " << config.layers
     << ", \"context\": " << config.context << ", \"d_ff\": " << config.d_ff
     << ", \"parameters\": " << P << "},\n"
     << "  \"training\": {\"steps\": " << ck.step << ", \"batch\": " << B << ", \"seq\": " << T
     << ", \"lr\": " << o.lr << ", \"repeat_share\": " << o.repeat_share << ", \"random_share\": " << o.random_share << ", \"copy_steps\": " << o.copy_steps << ", \"seed\": " << o.seed
     << ", \"tokens_seen\": " << ck.step * B * T << ", \"seconds\": " << ck.seconds
     << ", \"threads\": " << omp_get_max_threads() << "},\n"
     << "  \"data\": {\"bytes\": " << text.size() << ", \"tokens\": " << all.size()
     << ", \"unknown_share\": " << double(unknown) / all.size() << ", \"train_tokens\": "
     << train.size() << ", \"validation_tokens\": " << val.size() << "},\n"
     << "  \"loss\": {\"validation\": " << val_loss << ", \"unigram\": " << base.unigram
     << ", \"bigram\": " << base.bigram << ", \"repeat_first_copy\": " << repeat.first_copy
     << ", \"repeat_second_copy\": " << repeat.second_copy << "},\n  \"heads\": [\n";
  for (size_t i = 0; i < scores.size(); ++i) {
    const HeadScores& s = scores[i];
    js << "    {\"layer\": " << i / config.num_heads << ", \"head\": " << i % config.num_heads
       << ", \"previous_token\": " << s.previous_token << ", \"first_token\": " << s.first_token
       << ", \"local_window\": " << s.local_window << ", \"induction\": " << s.induction
       << ", \"role\": \"" << head_role(s) << "\"}" << (i + 1 < scores.size() ? ",\n" : "\n");
  }
  js << "  ]\n}\n";
  std::printf("wrote %s\n", report.c_str());
  return 0;
}
