import type { AlarmReader, AlarmState, AlarmValue } from "./port.ts";

/** Alarms in memory: tests and the embedded runtime set their states. */
export class MemoryAlarms implements AlarmReader {
  readonly #alarms = new Map<string, AlarmState>();

  /** Creates the alarm, or changes its state. */
  set(name: string, value: AlarmValue, reason = ""): AlarmState {
    const state = { name, value, reason };
    this.#alarms.set(name, state);
    return state;
  }

  delete(name: string): void {
    this.#alarms.delete(name);
  }

  async describe(names: readonly string[]): Promise<AlarmState[]> {
    return names.flatMap((n) => {
      const state = this.#alarms.get(n);
      return state ? [{ ...state }] : [];
    });
  }
}
