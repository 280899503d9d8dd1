import { AsyncLocalStorage } from "node:async_hooks";

type Env = Record<string, string | undefined>;

const storage = new AsyncLocalStorage<Env>();
let original: NodeJS.ProcessEnv | undefined;
let installs = 0;

/**
 * Gives every in-process Lambda invocation its own environment. `process.env` is global, but the
 * handlers read it (their composition roots build clients from `ROLLOUTS_TABLE`,
 * `AWS_ENDPOINT_URL_*`, …), and several functions with different environments run interleaved in
 * one process. So `process.env` is replaced by a proxy that answers from the environment of the
 * invocation in progress (an `AsyncLocalStorage` store, which follows the invocation through every
 * `await`, timer and I/O callback it starts) and falls back to the real environment outside any
 * invocation. Writes inside an invocation stay in that invocation's environment.
 *
 * Reference-counted: the real `process.env` object is put back when the last user uninstalls.
 */
export function installScopedEnv(): void {
  installs++;
  if (installs > 1) return;
  const base = process.env;
  original = base;
  const scoped = (key: string | symbol): Env | undefined => {
    const store = storage.getStore();
    return store !== undefined && typeof key === "string" && Object.hasOwn(store, key) ? store : undefined;
  };
  process.env = new Proxy(base, {
    get(target, key) {
      const store = scoped(key);
      return store === undefined ? Reflect.get(target, key) : store[key as string];
    },
    has(target, key) {
      return scoped(key) !== undefined || Reflect.has(target, key);
    },
    set(target, key, value) {
      const store = storage.getStore();
      if (store !== undefined && typeof key === "string") {
        store[key] = String(value);
        return true;
      }
      return Reflect.set(target, key, value);
    },
    deleteProperty(target, key) {
      const store = storage.getStore();
      if (store !== undefined && typeof key === "string") {
        store[key] = undefined;
        return true;
      }
      return Reflect.deleteProperty(target, key);
    },
    ownKeys(target) {
      const store = storage.getStore() ?? {};
      const keys = new Set([...Reflect.ownKeys(target), ...Object.keys(store)]);
      return [...keys].filter(
        (key) => typeof key !== "string" || store[key] !== undefined || !Object.hasOwn(store, key),
      );
    },
    getOwnPropertyDescriptor(target, key) {
      const store = storage.getStore();
      if (store !== undefined && typeof key === "string" && Object.hasOwn(store, key)) {
        const value = store[key];
        if (value === undefined) return undefined;
        return { value, writable: true, enumerable: true, configurable: true };
      }
      return Reflect.getOwnPropertyDescriptor(target, key);
    },
  });
}

/** Undoes one `installScopedEnv`; the last one restores the real `process.env`. */
export function uninstallScopedEnv(): void {
  if (installs === 0) return;
  installs--;
  if (installs === 0 && original !== undefined) {
    process.env = original;
    original = undefined;
  }
}

/**
 * Runs `work` (and everything it starts asynchronously) with `env` layered over the real
 * environment. Needs `installScopedEnv` to have been called to be visible through `process.env`.
 */
export function withEnv<T>(env: Readonly<Record<string, string>>, work: () => T): T {
  return storage.run({ ...env }, work);
}
