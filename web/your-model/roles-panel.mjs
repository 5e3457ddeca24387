// "Your model"'s table of head roles, measured on the loaded model (your-model-roles.mjs, in the
// worker): sortable by any column.
import { el, headName } from '../common/dom.mjs';
import { ROLES } from './your-model-roles.mjs';

export class RolesPanel {
  #roles = null;
  #heads = 0;
  #sort = { key: 'head', dir: 1 };

  constructor() {
    this.status = el('p', { className: 'hint', textContent: 'Measuring each head’s role…' });
    this.table = el('table', { className: 'mv-roles' });
    this.section = el('section', {}, el('h3', { textContent: 'Head roles, measured on this model' }), this.status,
      el('div', { className: 'table-wrap' }, this.table),
      el('p', { className: 'hint', textContent: 'Mean attention on random tokens from the model’s vocabulary, repeated once: previous token (i → i−1), first / BOS (i → 0), duplicate token (second copy → the same token in the first copy), induction (second copy → the token after its first occurrence). A head gets a role when its best score reaches 0.3.' }));
  }

  /** A model was loaded (heads a layer): its roles are being measured. */
  reset(heads) {
    this.#roles = null;
    this.#heads = heads;
  }

  /** A head's measured role ('' until measured, or none). */
  roleOf(layer, head) {
    // measureHeadRoles lists the heads layer by layer, so head h of layer l is entry l · heads + h.
    return this.#roles?.[layer * this.#heads + head]?.role ?? '';
  }

  /** A reply from the worker; true when it was this panel's (then roles may have changed). */
  message(data) {
    if (data.type === 'rolesProgress') {
      this.status.textContent = `Measuring each head’s role… ${data.done} of ${data.total} probe sequences`;
      return true;
    }
    if (data.type !== 'roles') return false;
    this.#roles = data.heads;
    this.status.textContent = '';
    this.#render();
    return true;
  }

  #render() {
    const { key, dir } = this.#sort;
    const rows = [...this.#roles].sort((a, b) => {
      const va = key === 'head' ? a.layer * 1000 + a.head : key === 'role' ? a.role : a.scores[key];
      const vb = key === 'head' ? b.layer * 1000 + b.head : key === 'role' ? b.role : b.scores[key];
      return (va < vb ? -1 : va > vb ? 1 : 0) * dir;
    });
    const head = el('tr');
    for (const [k, label] of [['head', 'head'], ...ROLES.map((r) => [r, r]), ['role', 'measured role']]) {
      const th = el('th', { scope: 'col' });
      th.setAttribute('aria-sort', key === k ? (dir > 0 ? 'ascending' : 'descending') : 'none');
      const b = el('button', { type: 'button', textContent: label });
      b.addEventListener('click', () => { this.#sort = { key: k, dir: key === k ? -dir : (k === 'head' || k === 'role' ? 1 : -1) }; this.#render(); });
      th.append(b);
      head.append(th);
    }
    const body = rows.map((r) => el('tr', {}, el('td', { textContent: headName(r.layer, r.head) }),
      ...ROLES.map((role) => el('td', { className: 'num', textContent: r.scores[role].toFixed(2) })), el('td', { textContent: r.role })));
    this.table.replaceChildren(el('thead', {}, head), el('tbody', {}, ...body));
  }
}
