import { type ModelRef, type ModelRegistry, RegistryError } from "./port.ts";
import type { RegistrySettings } from "./settings.ts";

type MlflowSettings = Extract<RegistrySettings, { type: "mlflow" }>;

/**
 * An MLflow tracking server's Model Registry, through the REST API the MLflow client calls: a
 * promoted version gets the alias (`POST /api/2.0/mlflow/registered-models/alias`) and the tag
 * `rollout=promoted`; a rolled-back version the tag `rolled-back` = the reason
 * (`POST /api/2.0/mlflow/model-versions/set-tag`). Serving code that loads `models:/<model>@<alias>`
 * picks the promoted version up on its next load.
 */
export class MlflowRegistry implements ModelRegistry {
  readonly #fetch: typeof fetch;

  constructor(
    private readonly settings: MlflowSettings,
    deps: { fetch?: typeof fetch; timeoutMs?: number } = {},
  ) {
    this.#fetch = deps.fetch ?? fetch;
    this.#timeoutMs = deps.timeoutMs ?? 10_000;
  }

  readonly #timeoutMs: number;

  async promoted(model: ModelRef): Promise<string> {
    const version = this.#version(model);
    const { model: name, alias } = this.settings;
    await this.#post("registered-models/alias", { name, alias, version });
    await this.#post("model-versions/set-tag", { name, version, key: "rollout", value: "promoted" });
    return `MLflow model ${name}: alias @${alias} → version ${version}`;
  }

  async rolledBack(model: ModelRef, reason: string): Promise<string> {
    const version = this.#version(model);
    const name = this.settings.model;
    await this.#post("model-versions/set-tag", { name, version, key: "rolled-back", value: reason });
    return `MLflow model ${name} version ${version} tagged rolled-back`;
  }

  #version(model: ModelRef): string {
    if (model.version === null) {
      throw new RegistryError(
        `MLflow model ${this.settings.model}: the released version is unknown (tag the push with the version number, 7 or v7)`,
      );
    }
    return model.version;
  }

  async #post(path: string, body: Record<string, string>): Promise<void> {
    const url = `${this.settings.trackingUri.replace(/\/+$/, "")}/api/2.0/mlflow/${path}`;
    let res: Response;
    try {
      res = await this.#fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      throw new RegistryError(`POST ${url} failed: ${(err as Error).message}`, { cause: err });
    }
    if (res.ok) return;
    const text = await res.text().catch(() => "");
    let detail = text.slice(0, 300);
    try {
      const parsed = JSON.parse(text) as { error_code?: string; message?: string };
      if (parsed.error_code || parsed.message) detail = `${parsed.error_code ?? ""}: ${parsed.message ?? ""}`;
    } catch {
      // not JSON: the text as it came
    }
    throw new RegistryError(`POST ${url} answered ${res.status}: ${detail}`);
  }
}
