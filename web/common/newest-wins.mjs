// One request to a worker in flight at a time; requests made meanwhile replace each other, and the
// newest is made when the answer comes. While the user types faster than the worker answers, only
// the newest text is computed, and answers to texts since replaced are not drawn.
export class NewestWins {
  #busy = false;
  #waiting = false;

  /** send() now if nothing is in flight (true); else remember that a newer request waits (false). */
  request(send) {
    if (this.#busy) { this.#waiting = true; return false; }
    this.#busy = true;
    this.#waiting = false;
    send();
    return true;
  }

  /** The answer came: true when a newer request waits (make it, and skip drawing this answer). */
  answered() {
    this.#busy = false;
    const waiting = this.#waiting;
    this.#waiting = false;
    return waiting;
  }

  /** The answer will never be drawn (its model was replaced), but the worker is free again. */
  free() { this.#busy = false; }

  get inFlight() { return this.#busy; }

  /** Forget everything (a new model). */
  reset() { this.#busy = this.#waiting = false; }
}
