import { MODEL_PACKAGE_ARN } from "../registry/settings.ts";
import type { CandidateArtifact, Pushed } from "./port.ts";

/**
 * The pushed image as the candidate's artifact, labelled with its tag (or digest): ECS, Lambda
 * and Kubernetes run it; a version approved in the Model Registry (the trigger's model package
 * events) is the SageMaker candidate's model package.
 */
export function pushedArtifact(pushed: Pushed): CandidateArtifact {
  const version = pushed.tag ?? pushed.digest;
  if (MODEL_PACKAGE_ARN.test(pushed.image)) return { modelPackage: pushed.image, version };
  return { image: pushed.image, version };
}
