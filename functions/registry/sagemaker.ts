import { AddTagsCommand, type SageMakerClient, UpdateModelPackageCommand } from "@aws-sdk/client-sagemaker";
import { awsErrorName } from "../aws-errors.ts";
import { type ModelRef, type ModelRegistry, RegistryError } from "./port.ts";

/**
 * The SageMaker Model Registry: a promoted package is `Approved` (`UpdateModelPackage`) and its
 * group tagged `production` = the package's version (`AddTags`), so the group says which version
 * serves; a rolled-back package is tagged `rolled-back` with the reason. A rollout started by an
 * image push (no package) has nothing to record there.
 */
export class SageMakerModelRegistry implements ModelRegistry {
  constructor(private readonly client: SageMakerClient) {}

  async promoted(model: ModelRef): Promise<string> {
    const pkg = model.modelPackage;
    if (!pkg) return "no model package was deployed: nothing recorded in the Model Registry";
    await this.#send(
      () =>
        this.client.send(
          new UpdateModelPackageCommand({
            ModelPackageArn: pkg,
            ModelApprovalStatus: "Approved",
            ApprovalDescription: "promoted by the rollout",
          }),
        ),
      `UpdateModelPackage ${pkg}`,
    );
    const group = groupArn(pkg);
    const version = model.version ?? pkg.split("/").at(-1) ?? "";
    await this.#send(
      () =>
        this.client.send(
          new AddTagsCommand({ ResourceArn: group, Tags: [{ Key: "production", Value: version }] }),
        ),
      `AddTags ${group}`,
    );
    return `model package ${pkg} approved; ${group} tagged production=${version}`;
  }

  async rolledBack(model: ModelRef, reason: string): Promise<string> {
    const pkg = model.modelPackage;
    if (!pkg) return "no model package was deployed: nothing recorded in the Model Registry";
    const value = tagValue(reason);
    await this.#send(
      () =>
        this.client.send(
          new AddTagsCommand({ ResourceArn: pkg, Tags: [{ Key: "rolled-back", Value: value }] }),
        ),
      `AddTags ${pkg}`,
    );
    return `model package ${pkg} tagged rolled-back=${value}`;
  }

  async #send(call: () => Promise<unknown>, what: string): Promise<void> {
    try {
      await call();
    } catch (err) {
      throw new RegistryError(`${what} failed: ${awsErrorName(err) ?? "error"}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
}

/** `…:model-package/<group>/<version>` → `…:model-package-group/<group>`. */
export function groupArn(packageArn: string): string {
  return packageArn.replace(/:model-package\/([^/]+)\/\d+$/, ":model-package-group/$1");
}

/**
 * A reason as a tag value: SageMaker tag values are at most 256 characters of letters, digits,
 * spaces and `_ . : / = + - @`; anything else becomes a space.
 */
export function tagValue(reason: string): string {
  const clean = reason
    .replace(/[^\p{L}\p{Z}\p{N}_.:/=+\-@]/gu, " ")
    .replace(/\s+/g, " ")
    .trim();
  return clean.slice(0, 256) || "rolled back";
}
