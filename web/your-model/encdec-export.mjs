// Downloads of the encoder-decoder view (encdec-view.mjs): the enlarged matrix as PNG and SVG (the
// common heatmap exports), every head of the kind shown as CSV, and everything as JSON (both
// sides' tokens, every head of the three kinds, the alignment, a generation's rows as they came).
import { csvField, download } from '../common/export.mjs';

/**
 * One CSV row per (layer, head, row token, column token) of one kind of attention: attentions is
 * layers × heads × rows × cols, rowTokens and colTokens label its rows and columns.
 */
export function encdecCsv({ kind, attentions, layers, heads, rowTokens, colTokens }) {
  const rows = rowTokens.length, cols = colTokens.length;
  const lines = ['kind,layer,head,row_index,row_token,col_index,col_token,weight'];
  for (let l = 0; l < layers; l += 1) {
    for (let h = 0; h < heads; h += 1) {
      const at = (l * heads + h) * rows * cols;
      for (let i = 0; i < rows; i += 1) {
        for (let j = 0; j < cols; j += 1) {
          lines.push([kind, l + 1, h + 1, i, csvField(rowTokens[i]), j, csvField(colTokens[j]), attentions[at + i * cols + j]].join(','));
        }
      }
    }
  }
  return `${lines.join('\n')}\n`;
}

/** layers × heads × rows × cols as nested arrays [layer][head][row][col]. */
export function nested(attentions, layers, heads, rows, cols) {
  return Array.from({ length: layers }, (_, l) => Array.from({ length: heads }, (_, h) => Array.from({ length: rows }, (_, i) => {
    const at = ((l * heads + h) * rows + i) * cols;
    return Array.from(attentions.subarray(at, at + cols));
  })));
}

export function downloadText(filename, text, type) {
  download(filename, new Blob([text], { type }));
}
