/**
 * Counts the work in flight in the runtime (executions that are not parked on a timer or a task
 * token, Lambda invocations, façade requests). Virtual time may only move when nothing is in
 * flight, otherwise a test would skip past a Wait that an execution was about to enter: `idle()`
 * is what the runtime awaits before it advances the clock.
 */
export class Activity {
  #busy = 0;
  #waiters: Array<() => void> = [];

  /** Marks one unit of work as started; call the returned function exactly once when it ends. */
  begin(): () => void {
    this.#busy++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#busy--;
      if (this.#busy === 0) this.#notify();
    };
  }

  /** Runs `work` as one unit of activity. */
  async track<T>(work: () => Promise<T>): Promise<T> {
    const end = this.begin();
    try {
      return await work();
    } finally {
      end();
    }
  }

  /**
   * Runs while work that holds a unit (an execution) waits on something outside itself (a timer,
   * a token): the unit is released for the wait and taken back when the wait settles.
   */
  async park<T>(wait: Promise<T>): Promise<T> {
    this.#busy--;
    if (this.#busy === 0) this.#notify();
    try {
      return await wait;
    } finally {
      this.#busy++;
    }
  }

  get busy(): number {
    return this.#busy;
  }

  /**
   * Resolves when nothing is in flight and stays so across two turns of the event loop (so the
   * microtasks and I/O callbacks that follow a settled wait have run).
   */
  async idle(): Promise<void> {
    for (;;) {
      if (this.#busy > 0) await new Promise<void>((resolve) => this.#waiters.push(resolve));
      await turn();
      await turn();
      if (this.#busy === 0) return;
    }
  }

  #notify(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}

function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
