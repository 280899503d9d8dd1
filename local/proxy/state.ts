import { type ProxyConfig, type ProxyConfigInput, ProxyConfigSchema } from "./config.ts";
import { ExactShare } from "./exact-share.ts";

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

  constructor(config: ProxyConfigInput | undefined, testers: TestersHeader) {
    this.testers = testers;
    this.#config = config ? ProxyConfigSchema.parse(config) : null;
    this.#share = new ExactShare(this.#config?.weight ?? 0);
  }

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
  }

  /** What `GET /admin/config` answers. */
  view() {
    return { config: this.#config, split: this.#share.counts, testersHeader: this.testers };
  }
}
