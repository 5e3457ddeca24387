// Writes web/model/MODEL_CARD.md and the trained-model table in docs/pages.md from the trainer's
// report (web/model/austen.json), so the numbers shown are always the measured ones.
//   node scripts/model-card.mjs        (scripts/train.sh runs it after training)
import { readFileSync, statSync, writeFileSync } from 'node:fs';

const report = JSON.parse(readFileSync('web/model/austen.json', 'utf8'));
const { config, training, data, loss, heads } = report;
const modelBytes = statSync('web/model/austen.mhlm').size;
const f2 = (x) => x.toFixed(2);
const ppl = (nats) => Math.exp(nats).toFixed(0);

const headTable = [
  '| head | previous token | first token | local window | induction | measured role |',
  '|---|---:|---:|---:|---:|---|',
  ...heads.map((h) => `| L${h.layer + 1} H${h.head + 1} | ${f2(h.previous_token)} | ${f2(h.first_token)} | ${f2(h.local_window)} | ${f2(h.induction)} | ${h.role} |`),
].join('\n');

const lossTable = [
  '| model | validation loss (nats/token) | perplexity |',
  '|---|---:|---:|',
  `| word frequencies (unigram) | ${f2(loss.unigram)} | ${ppl(loss.unigram)} |`,
  `| bigram (interpolated, weight chosen on validation) | ${f2(loss.bigram)} | ${ppl(loss.bigram)} |`,
  `| **this model** | **${f2(loss.validation)}** | **${ppl(loss.validation)}** |`,
].join('\n');

const summary = `${config.layers} layers × ${config.num_heads} heads, d_model ${config.d_model}, ` +
  `${config.d_ff ? `MLP width ${config.d_ff}` : 'attention only'}, context ${config.context}, ` +
  `${config.vocab}-word vocabulary, ${config.parameters.toLocaleString('en')} parameters, ` +
  `stored as fp16: ${(modelBytes / 1e6).toFixed(2)} MB with the vocabulary.`;

writeFileSync('web/model/MODEL_CARD.md', `# Model card: austen.mhlm

${summary}

## Data
Jane Austen's six novels as Debian ships them in \`r-cran-janeaustenr\` (${(data.bytes / 1e6).toFixed(1)} MB of
text; the novels are in the public domain, the package is MIT-licensed), exported one line per line by
\`scripts/prepare-corpus.sh\`. Tokenizer: \`src/io/tokenizer.h\` (lowercased words, "'s"-style suffixes,
punctuation and "--" as tokens; Gutenberg's \`_italics_\` underscores dropped). ${data.tokens.toLocaleString('en')}
tokens, ${(data.unknown_share * 100).toFixed(1)}% of them outside the ${config.vocab}-entry vocabulary (\`<unk>\`).
Split: one 4096-token chunk in 20 held out for validation (${data.validation_tokens.toLocaleString('en')} tokens).

## Training
\`npm run train\` (\`scripts/train.sh\`): ${training.steps.toLocaleString('en')} steps of ${training.batch} × ${training.seq} tokens
(${(training.tokens_seen / 1e6).toFixed(1)}M tokens), AdamW (β 0.9/0.98, no weight decay), learning rate ${training.lr} with
warm-up and cosine decay to 10%, gradient norm clipped at 1, seed ${training.seed}. Curriculum and data mix: the first
${training.copy_steps.toLocaleString('en')} steps use only random-token segments repeated to fill the window (period 8 … ${training.seq / 2}); after
that ${Math.round(training.random_share * 100)}% of sequences are such repeats, and ${Math.round(training.repeat_share * 100)}% of the rest are Austen with one span
copied later in the same window (both so that induction heads form within a short run); the rest is plain Austen.
Time: ${(training.seconds / 60).toFixed(1)} minutes on ${training.threads === 1 ? 'one thread' : `${training.threads} threads`} of this project's 2-core machine (while other runs shared it).

## Evaluation (held-out Austen)
${lossTable}

On random tokens repeated twice (not a property of English: a test of in-context copying) the loss is
${f2(loss.repeat_first_copy)} nats/token on the first copy and ${f2(loss.repeat_second_copy)} on the second.

## Heads (mean attention weight; see \`src/core/head_metrics.h\` for the definitions)
${headTable}

## Limits
A tiny model: it continues text with plausible Austen-like words, not sense. Trained on one author's
early-19th-century English; its predictions carry that corpus's vocabulary and attitudes. Not for any use
beyond showing how attention heads specialise.
`);

const readme = readFileSync('docs/pages.md', 'utf8');
const start = '<!-- trained-model-table:start -->', end = '<!-- trained-model-table:end -->';
const at = readme.indexOf(start), stop = readme.indexOf(end);
if (at < 0 || stop < 0) throw new Error('docs/pages.md lacks the trained-model-table markers');
writeFileSync('docs/pages.md', `${readme.slice(0, at + start.length)}\n${summary}\n\n${lossTable}\n\n${headTable}\n${readme.slice(stop)}`);
console.log('wrote web/model/MODEL_CARD.md and the table in docs/pages.md');
