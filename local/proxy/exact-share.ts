/**
 * The exact, deterministic split: of every 100 requests exactly `percent` go to
 * the candidate, spread evenly (1 in 4 at 25%, not 25 in a row). Integer arithmetic, so 1,000
 * requests at 7% are exactly 70, which keeps tests and the demo's numbers reproducible.
 */
export class ExactShare {
  #count = 0;
  #hits = 0;

  constructor(readonly percent: number) {
    if (!Number.isInteger(percent) || percent < 0 || percent > 100) {
      throw new RangeError(`share must be an integer percent between 0 and 100, got ${percent}`);
    }
  }

  /** True when this request goes to the candidate. */
  next(): boolean {
    this.#count += 1;
    if (Math.floor((this.#count * this.percent) / 100) > this.#hits) {
      this.#hits += 1;
      return true;
    }
    return false;
  }

  /** Requests seen and how many went to the candidate, since the weight was set. */
  get counts(): { total: number; candidate: number } {
    return { total: this.#count, candidate: this.#hits };
  }
}
