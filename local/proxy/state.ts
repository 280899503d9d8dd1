import { ModelRouter, type ModelRouterOptions } from "../../functions/router/router.ts";
import { type ProxyConfig, type ProxyConfigInput, ProxyConfigSchema } from "./config.ts";
import { ExactShare } from "./exact-share.ts";
import { modelMode, toModelConfig } from "./model.ts";

/** The header that reaches the candidate whatever the weight (blue/green preview, testers). */
export interface TestersHeader {
  readonly name: string;
  readonly value: string;
}

/** The proxy's configuration and the split it keeps, shared by its traffic and admin listeners. */
export class ProxyState {
  readonly testers: TestersHeader;
  #config: ProxyConfig | null;
  #share: ExactShare;

  /** The model router requests go through when the configuration asks for cohorts or a mirror. */
  readonly model: ModelRouter;

  constructor(
    config: ProxyConfigInput | undefined,
    testers: TestersHeader,
    model: Omit<ModelRouterOptions, "config" | "split"> = {},
  ) {
    this.testers = testers;
    this.#config = config ? ProxyConfigSchema.parse(config) : null;
    this.#share = new ExactShare(this.#config?.weight ?? 0);
    // Not sticky, the model router splits with the proxy's exact share.
    this.model = new ModelRouter({ ...model, split: () => this.#share.next() });
    if (this.#config) {
      this.model.configure(toModelConfig(this.#config));
      this.#modelMode = modelMode(this.#config);
    }
  }

  /**
   * True when requests go through {@link model}: from the first configuration that asks for model
   * settings or a mirror on, so removing a shadow keeps the per-version statistics and feedback of
   * the steps that follow.
   */
  get modelMode(): boolean {
    return this.#modelMode;
  }

  #modelMode = false;

  get config(): ProxyConfig | null {
    return this.#config;
  }

  get share(): ExactShare {
    return this.#share;
  }

  /** A new weight or candidate restarts the split, so each step starts exact. */
  apply(next: ProxyConfig): void {
    const current = this.#config;
    const weightChanged =
      current === null || current.weight !== next.weight || current.canary !== next.canary;
    this.#config = next;
    if (weightChanged) this.#share = new ExactShare(next.weight);
    this.model.configure(toModelConfig(next));
    this.#modelMode ||= modelMode(next);
  }

  /** What `GET /admin/config` answers. */
  view() {
    return {
      config: this.#config,
      split: this.#share.counts,
      testersHeader: this.testers,
      mirror: { ...this.model.mirror },
    };
  }
}
