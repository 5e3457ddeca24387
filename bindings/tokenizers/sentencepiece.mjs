// SentencePiece model files (.model, Marian's source.spm / target.spm): a ModelProto in protobuf
// (sentencepiece_model.proto), read here field by field; and the parts of a Tokenizer
// (tokenizer.mjs) that tokenize as the sentencepiece library does: its normalizer over the whole
// text, no pre-tokenizer, its Unigram model, ids from the model or from a vocab.json (Marian).
import { ProtobufReader } from './protobuf.mjs';
import { PIECE, Unigram } from './unigram.mjs';
import { sentencePieceNormalizer } from './precompiled.mjs';

const fail = (message) => { throw new Error(`multihead: SentencePiece model: ${message}`); };

const MODEL_TYPES = { 1: 'unigram', 2: 'bpe', 3: 'word', 4: 'char' };
// No model has more; a corrupted count is refused before anything that size is made.
const MAX_PIECES = 4_000_000;

const utf8 = new TextDecoder('utf-8', { fatal: true });
function text(bytes, what) {
  try { return utf8.decode(bytes); } catch { return fail(`${what} is not UTF-8 text (the file is corrupted)`); }
}

function readPiece(r) {
  let piece = null, score = 0, type = PIECE.NORMAL;
  while (!r.done) {
    const { field, wire } = r.key();
    if (field === 1 && wire === 2) piece = text(r.lengthDelimited(), 'a piece');
    else if (field === 2 && wire === 5) score = r.float32();
    else if (field === 3 && wire === 0) type = r.varint();
    else r.skip(wire);
  }
  if (piece === null || piece === '') fail('a piece has no text');
  if (!(type >= 1 && type <= 6)) fail(`the piece ${JSON.stringify(piece)} has type ${type}, which SentencePiece does not define`);
  return { piece, score, type };
}

function readTrainerSpec(r) {
  const spec = { modelType: 'unigram', byteFallback: false, treatWhitespaceAsSuffix: false, unkId: 0, bosId: 1, eosId: 2, padId: -1 };
  const ints = { 40: 'unkId', 41: 'bosId', 42: 'eosId', 43: 'padId' };
  while (!r.done) {
    const { field, wire } = r.key();
    if (field === 3 && wire === 0) {
      const type = r.varint();
      spec.modelType = MODEL_TYPES[type] ?? fail(`model type ${type} is not one SentencePiece defines`);
    } else if (field === 35 && wire === 0) spec.byteFallback = r.varint() !== 0;
    else if (field === 24 && wire === 0) spec.treatWhitespaceAsSuffix = r.varint() !== 0;
    else if (ints[field] && wire === 0) spec[ints[field]] = r.varint() | 0;
    else r.skip(wire);
  }
  return spec;
}

function readNormalizerSpec(r) {
  const spec = { name: '', charsmap: new Uint8Array(0), addDummyPrefix: true, removeExtraWhitespaces: true, escapeWhitespaces: true };
  while (!r.done) {
    const { field, wire } = r.key();
    if (field === 1 && wire === 2) spec.name = text(r.lengthDelimited(), 'the normalizer name');
    else if (field === 2 && wire === 2) spec.charsmap = r.lengthDelimited();
    else if (field === 3 && wire === 0) spec.addDummyPrefix = r.varint() !== 0;
    else if (field === 4 && wire === 0) spec.removeExtraWhitespaces = r.varint() !== 0;
    else if (field === 5 && wire === 0) spec.escapeWhitespaces = r.varint() !== 0;
    else r.skip(wire);
  }
  return spec;
}

/**
 * Reads a SentencePiece ModelProto.
 * @param {Uint8Array} bytes
 * @returns {{ pieces: Array<{ piece: string, score: number, type: number }>, trainer: object, normalizer: object }}
 */
export function readSentencePieceModel(bytes) {
  if (!(bytes instanceof Uint8Array)) fail(`the model file must be bytes (a Uint8Array), got ${bytes === null ? 'null' : typeof bytes}`);
  const r = new ProtobufReader(bytes, fail);
  const pieces = [];
  let trainer = null, normalizer = null;
  while (!r.done) {
    const { field, wire } = r.key();
    if (field === 1 && wire === 2) {
      if (pieces.length >= MAX_PIECES) fail(`it has more than ${MAX_PIECES} pieces`);
      pieces.push(readPiece(r.message()));
    } else if (field === 2 && wire === 2) trainer = readTrainerSpec(r.message());
    else if (field === 3 && wire === 2) normalizer = readNormalizerSpec(r.message());
    else r.skip(wire);
  }
  if (!pieces.length) fail('it has no pieces (is it a SentencePiece model?)');
  trainer ??= readTrainerSpec(new ProtobufReader(new Uint8Array(0), fail));
  normalizer ??= readNormalizerSpec(new ProtobufReader(new Uint8Array(0), fail));
  const unknown = pieces.filter((p) => p.type === PIECE.UNKNOWN);
  if (unknown.length !== 1) fail(`it has ${unknown.length} unknown pieces; SentencePiece needs exactly one`);
  const seen = new Set();
  for (const { piece } of pieces) {
    if (seen.has(piece)) fail(`the piece ${JSON.stringify(piece)} is defined twice`);
    seen.add(piece);
  }
  return { pieces, trainer, normalizer };
}

// A SentencePiece Unigram model whose ids come from elsewhere (Marian's vocab.json): each piece's
// id there, or the unknown token's for a piece it lacks.
class MappedUnigram extends Unigram {
  constructor(spec, vocab, unkId) {
    super(spec);
    this.outputIds = Int32Array.from(this.pieces, (piece) => vocab.get(piece) ?? unkId);
    this.vocab = vocab;
    this.tokensById = null;  // the ids given out are vocab.json's
  }
}

/**
 * The parts of a Tokenizer (tokenizer.mjs's constructor takes them) for a SentencePiece model:
 * ids from vocab (a Map piece → id, Marian's vocab.json) or else the model's own; the end token
 * (eos: its piece) appended, as Marian and T5 do.
 * @param {ReturnType<typeof readSentencePieceModel>} model
 * @param {{ vocab?: Map<string, number> | null, unkToken?: string, eosToken?: string }} options
 */
export function sentencePieceParts(model, { vocab = null, unkToken, eosToken } = {}) {
  const { pieces, trainer } = model;
  if (trainer.modelType !== 'unigram') fail(`its model type is ${trainer.modelType}; only unigram models are supported`);
  const spec = {
    type: 'Unigram',
    vocab: pieces.map((p) => [p.piece, p.score]),
    unk_id: pieces.findIndex((p) => p.type === PIECE.UNKNOWN),
    byte_fallback: trainer.byteFallback,
    piece_types: Uint8Array.from(pieces, (p) => p.type),
  };
  const unk = unkToken ?? pieces[spec.unk_id].piece;
  let unigram;
  if (vocab) {
    if (!vocab.has(unk)) fail(`vocab.json has no ${JSON.stringify(unk)} for unknown pieces`);
    unigram = new MappedUnigram(spec, vocab, vocab.get(unk));
  } else unigram = new Unigram(spec);
  const ids = unigram.vocab;
  // The model's end piece is a control piece (eos_id -1: none).
  const eos = eosToken ?? (pieces[trainer.eosId]?.type === PIECE.CONTROL ? pieces[trainer.eosId].piece : undefined);
  const userDefined = pieces.filter((p) => p.type === PIECE.USER_DEFINED).map((p) => p.piece);
  return {
    model: unigram,
    normalizer: sentencePieceNormalizer(model.normalizer, { treatWhitespaceAsSuffix: trainer.treatWhitespaceAsSuffix, userDefined }),
    pre_tokenizer: null,
    post_processor: eos !== undefined && ids.has(eos) ? {
      type: 'TemplateProcessing',
      single: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: eos, type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 0 } }, { SpecialToken: { id: eos, type_id: 0 } }],
      special_tokens: { [eos]: { id: eos, ids: [ids.get(eos)], tokens: [eos] } },
    } : null,
    decoder: {
      type: 'Sequence',
      decoders: [
        ...(trainer.byteFallback ? [{ type: 'ByteFallback' }] : []),
        { type: 'Metaspace', replacement: '▁', prepend_scheme: model.normalizer.addDummyPrefix ? 'always' : 'never' },
      ],
    },
    // Control and unknown pieces never come out of text; written in it they are those tokens.
    added_tokens: pieces.flatMap((p) => (p.type === PIECE.CONTROL || p.type === PIECE.UNKNOWN) && ids.has(p.piece)
      ? [{ id: ids.get(p.piece), content: p.piece, special: true }] : []),
  };
}
