// Tokenizing long text with every fixture's tokenizer (tests/fixtures/hf): 1 MB of prose (the
// shipped model's Austen card and a sentence mix, repeated), and 1 MB of 'a b ' — the worst case
// for a SentencePiece-style BPE with no pre-tokenizer, where the whole text is one word (and for
// Marian's SentencePiece model files, whose Unigram model sees the whole text at once).
// Medians of 3 after a warm-up; the text goes through encode() as a page's paste does.
// Usage: npm run bench:tokenizers [-- --mb 1]
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadTokenizer } from '../bindings/multihead.mjs';
import { machine } from './machine.mjs';
import { median } from './stats.mjs';

const at = process.argv.indexOf('--mb');
const bytes = Math.round((at > 0 ? Number(process.argv[at + 1]) : 1) * 2 ** 20);
const FIXTURES = 'tests/fixtures/hf';
const MODELS = ['gpt2', 'bert', 'llama', 'qwen2', 'gpt_neox', 'gpt_neo', 'qwen3', 'gemma3', 'distilbert', 'roberta', 't5', 'marian', 'bart'];

const prose = 'It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife. ' +
  'When Mary and John went to the store, John gave a drink to Mary. The cat sat on the mat; it was tired.\n' +
  'Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich — 1234567890 ✓ 東京 🙂\n';
const fill = (unit) => unit.repeat(Math.ceil(bytes / unit.length)).slice(0, bytes);
const texts = { prose: fill(prose), 'a b ': fill('a b ') };

const read = (model, file, encoding = 'utf8') => {
  try { return readFileSync(join(FIXTURES, model, file), encoding ?? undefined); } catch { return undefined; }
};
const fileBytes = (model, file) => { const b = read(model, file, null); return b && new Uint8Array(b); };
const results = [];
console.log(`${machine().cpu}; ${(bytes / 2 ** 20).toFixed(2)} MB of text, medians of 3 (ms)`);
console.log('| tokenizer | prose | tokens | a b … | tokens |');
console.log('|---|---|---|---|---|');
for (const model of MODELS) {
  const config = read(model, 'tokenizer_config.json');
  const tokenizer = loadTokenizer({
    tokenizerJson: read(model, 'tokenizer.json'), vocabJson: read(model, 'vocab.json'), mergesTxt: read(model, 'merges.txt'),
    vocabTxt: read(model, 'vocab.txt'), spmSource: fileBytes(model, 'source.spm'), spmTarget: fileBytes(model, 'target.spm'),
    tokenizerConfig: config ? JSON.parse(config) : {},
  });
  const row = { model };
  for (const [name, text] of Object.entries(texts)) {
    tokenizer.encode(text.slice(0, 10000));
    const times = [];
    let count = 0;
    for (let r = 0; r < 3; r += 1) {
      const t0 = performance.now();
      count = tokenizer.encode(text).ids.length;
      times.push(performance.now() - t0);
    }
    row[name] = { ms: median(times), tokens: count };
  }
  results.push(row);
  console.log(`| ${model} | ${row.prose.ms.toFixed(0)} | ${row.prose.tokens} | ${row['a b '].ms.toFixed(0)} | ${row['a b '].tokens} |`);
}
writeFileSync('bench/tokenizers-results.json', `${JSON.stringify({ machine: machine(), bytes, results }, null, 2)}\n`);
