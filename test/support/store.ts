import type { RolloutStore } from "../../functions/store/port.ts";

/**
 * The same store with `before` run ahead of every `save` of the rollout item (to let another
 * writer slip in, or to crash the function); every other method is the store's own.
 */
export function interceptSaves(store: RolloutStore, before: () => Promise<void> | void): RolloutStore {
  return new Proxy(store, {
    get(target, property) {
      if (property === "save")
        return async (...args: Parameters<RolloutStore["save"]>) => {
          await before();
          return target.save(...args);
        };
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
