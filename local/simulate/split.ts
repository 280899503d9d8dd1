import { canaryCounts } from "../../statemachine/pods.ts";

/**
 * The simulator's traffic arithmetic, pure and exact: how many requests a virtual second carries,
 * which side each one reaches, and how many pods of each side serve at a given moment.
 */

/**
 * Requests per second as whole requests: `rps` may be fractional, the remainder carries over to
 * the next second, so 2.5 rps is 2, 3, 2, 3, … and N seconds always carry floor(N × rps) requests.
 */
export class RequestClock {
  #carry = 0;
  constructor(readonly rps: number) {
    if (!Number.isFinite(rps) || rps < 0) throw new RangeError(`rps must be a number >= 0, got ${rps}`);
  }
  /** The whole requests of the next second. */
  next(): number {
    this.#carry += this.rps;
    // 1e-9 keeps 0.1 × 10 at 1 despite binary fractions.
    const count = Math.floor(this.#carry + 1e-9);
    this.#carry -= count;
    return count;
  }
}

/**
 * An exact split of `numerator / denominator`, the local proxy's arithmetic generalized to
 * fractions: of the first n requests exactly floor(n × share) go to the candidate, spread evenly
 * (1 in 4 at 25%, 1 in 3 with one canary pod next to two stable ones). Restarts when the share
 * changes, as the proxy's counter does when its weight changes.
 */
export class ExactSplit {
  #count = 0;
  #hits = 0;
  constructor(
    readonly numerator: number,
    readonly denominator: number,
  ) {
    if (!(denominator > 0) || numerator < 0 || numerator > denominator) {
      throw new RangeError(`a share is 0..1, got ${numerator}/${denominator}`);
    }
  }
  /** True when this request reaches the candidate. */
  next(): boolean {
    this.#count += 1;
    if (Math.floor((this.#count * this.numerator) / this.denominator) > this.#hits) {
      this.#hits += 1;
      return true;
    }
    return false;
  }
  same(numerator: number, denominator: number): boolean {
    return numerator * this.denominator === this.numerator * denominator;
  }
}

/** Pods of one version, by the virtual second each one started. */
class PodSet {
  readonly started: number[] = [];
  constructor(initial: number) {
    for (let i = 0; i < initial; i++) this.started.push(Number.NEGATIVE_INFINITY);
  }
  ready(now: number, delay: number): number {
    return this.started.filter((s) => now - s >= delay).length;
  }
  /** Scales up by starting pods now; scales down by removing the youngest first. */
  scaleTo(n: number, now: number): void {
    while (this.started.length < n) this.started.push(now);
    this.started.sort((a, b) => a - b);
    if (this.started.length > n) this.started.length = n;
  }
}

/**
 * Whole pods behind one Service (no traffic router), the way Argo Rollouts runs a basic canary:
 * a weight becomes canary and stable pod counts by Argo's rounding (with the surge pod), a pod
 * serves once it has run `readyDelay` seconds, and a side only loses pods once the other side's
 * replacements serve (Argo scales the stable ReplicaSet down after the canary's is available), so
 * capacity never drops below the replicas. Each ready pod gets an equal share of connections.
 */
export class PodModel {
  readonly #canary: PodSet;
  readonly #stable: PodSet;
  #wanted = { canary: 0, stable: 0 };
  constructor(
    readonly replicas: number,
    readonly maxSurge: number,
    readonly readyDelay: number,
  ) {
    if (!Number.isInteger(replicas) || replicas < 1)
      throw new RangeError(`replicas must be >= 1, got ${replicas}`);
    if (!(readyDelay >= 0)) throw new RangeError(`ready delay must be >= 0 s, got ${readyDelay}`);
    this.#canary = new PodSet(0);
    this.#stable = new PodSet(replicas);
    this.#wanted = { canary: 0, stable: replicas };
  }

  /** The pods a weight asks for (100% is the candidate on every replica, 0% the stable on every one). */
  counts(weight: number): { canary: number; stable: number } {
    if (weight >= 100) return { canary: this.replicas, stable: 0 };
    if (weight <= 0) return { canary: 0, stable: this.replicas };
    return canaryCounts(this.replicas, weight, this.maxSurge);
  }

  /** Moves to the pods `weight` asks for at virtual second `now`; returns the ready pods per side. */
  at(weight: number, now: number): { canary: number; stable: number } {
    const wanted = this.counts(weight);
    if (wanted.canary !== this.#wanted.canary || wanted.stable !== this.#wanted.stable) {
      this.#wanted = wanted;
      // Scale-ups start pods now; scale-downs wait for the other side's replacements (below).
      if (wanted.canary > this.#canary.started.length) this.#canary.scaleTo(wanted.canary, now);
      if (wanted.stable > this.#stable.started.length) this.#stable.scaleTo(wanted.stable, now);
    }
    const total = wanted.canary + wanted.stable;
    // A side shrinks to what it was asked for once the other side serves enough to cover the rest.
    const canaryReady = this.#canary.ready(now, this.readyDelay);
    const stableReady = this.#stable.ready(now, this.readyDelay);
    const stableKeep = Math.max(wanted.stable, Math.min(this.#stable.started.length, total - canaryReady));
    const canaryKeep = Math.max(wanted.canary, Math.min(this.#canary.started.length, total - stableReady));
    this.#stable.scaleTo(stableKeep, now);
    this.#canary.scaleTo(canaryKeep, now);
    return {
      canary: this.#canary.ready(now, this.readyDelay),
      stable: this.#stable.ready(now, this.readyDelay),
    };
  }
}
