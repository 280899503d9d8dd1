import { createHash } from "node:crypto";
import {
  type ContainerDefinition,
  CreateModelCommand,
  DeleteModelCommand,
  type SageMakerClient,
} from "@aws-sdk/client-sagemaker";
import { TargetConfigurationError } from "../errors.ts";
import type { CandidateArtifact } from "../port.ts";
import { createOnce, deleteIfPresent } from "./resources.ts";

/**
 * The candidate's model: a container running the pushed model package (or image), created with
 * `CreateModel` under the role the settings name, and deleted after an abort once nothing serves it.
 */
export class Models {
  constructor(
    private readonly sagemaker: SageMakerClient,
    private readonly executionRoleArn: string,
  ) {}

  /** Creates model `name` running `container`, unless a first attempt did. */
  async create(name: string, container: ContainerDefinition): Promise<void> {
    await createOnce(
      () =>
        this.sagemaker.send(
          new CreateModelCommand({
            ModelName: name,
            ExecutionRoleArn: this.executionRoleArn,
            PrimaryContainer: container,
          }),
        ),
      `model ${name}`,
    );
  }

  async delete(name: string): Promise<void> {
    await deleteIfPresent(() => this.sagemaker.send(new DeleteModelCommand({ ModelName: name })));
  }
}

/** The container the candidate's model runs: a model package by ARN, or an image. */
export function containerOf(artifact: CandidateArtifact, endpointName: string): ContainerDefinition {
  if ("modelPackage" in artifact) return { ModelPackageName: artifact.modelPackage };
  if ("image" in artifact) return { Image: artifact.image };
  throw new TargetConfigurationError(
    `endpoint ${endpointName} runs a model: give artifact.modelPackage (a model package ARN) or artifact.image`,
  );
}

/** The hash naming what a candidate creates: the same container on the same stable config, the same names. */
export function candidateHash(container: ContainerDefinition, stableConfig: string): string {
  return createHash("sha256")
    .update(JSON.stringify([container, stableConfig]))
    .digest("hex")
    .slice(0, 10);
}
