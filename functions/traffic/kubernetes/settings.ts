import { z } from "zod";
import { LIMIT_MESSAGES, MAX_REPLICAS, MAX_WAIT_SECONDS } from "../../../statemachine/limits.ts";

/**
 * The settings of the `kubernetes` target: how to reach the cluster, the Deployments, and the
 * router that splits traffic. They are embedded in the compiled workflow's Tasks, so they are
 * external input for the handlers and are parsed here with messages that name the field.
 */

const WaitSeconds = () => z.number().int().positive().max(MAX_WAIT_SECONDS, LIMIT_MESSAGES.wait);
const Replicas = () => z.number().int().nonnegative().max(MAX_REPLICAS, LIMIT_MESSAGES.replicas);

/** A Kubernetes object name (RFC 1123 subdomain), as the API refuses anything else. */
const Name = () =>
  z
    .string()
    .max(253)
    .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, "a Kubernetes name: lower-case letters, digits, '-' and '.'");

/** A label key (`prefix/name`). */
const LabelKey = () =>
  z
    .string()
    .max(316)
    .regex(
      /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/,
      "a label key (prefix/name)",
    );

/** How the function authenticates to the API server. */
export const KubeAuthSchema = z.discriminatedUnion("type", [
  /** EKS: the function's IAM role, mapped by an access entry; the token is a presigned STS URL. */
  z
    .object({
      type: z.literal("eks"),
      clusterName: z.string().min(1).max(100),
      /** The cluster's region. @default the function's region (`AWS_REGION`) */
      region: z
        .string()
        .regex(/^[a-z]{2}(-[a-z]+)+-\d$/, "a region name")
        .optional(),
    })
    .strict(),
  /** A kubeconfig (server, CA, token of its current context) held in Secrets Manager. */
  z.object({ type: z.literal("kubeconfig-secret"), secretArn: z.string().min(1) }).strict(),
  /**
   * A bearer token given in the settings: the local API of the embedded runtime only (the
   * construct refuses it elsewhere, since the settings are visible in the workflow's definition).
   */
  z.object({ type: z.literal("token"), token: z.string() }).strict(),
]);

/** The routers: how a weight becomes traffic. */
export const KubeRouterSchema = z.discriminatedUnion("type", [
  /** No traffic router: one Service over both Deployments' pods; a weight is a pod count. */
  z.object({ type: z.literal("pods") }).strict(),
  /** Gateway API: the weights of an HTTPRoute's backendRefs to the stable and canary Services. */
  z
    .object({
      type: z.literal("gateway-api"),
      httpRoute: Name(),
      stableService: Name(),
      canaryService: Name(),
    })
    .strict(),
  /** Istio: the weights of a VirtualService's HTTP route destinations (hosts). */
  z
    .object({
      type: z.literal("istio"),
      virtualService: Name(),
      /** Destination host of the stable pods (a Service name, or a FQDN). */
      stableService: z.string().min(1),
      canaryService: z.string().min(1),
      /** The named HTTP routes to split. @default every route with both destinations */
      routes: z.array(z.string().min(1)).min(1).optional(),
    })
    .strict(),
  /**
   * NGINX ingress controller: a canary Ingress (a copy of `stableIngress` pointing at the canary
   * Service) that the target creates and weighs with `canary-weight`.
   */
  z
    .object({
      type: z.literal("nginx"),
      stableIngress: Name(),
      stableService: Name(),
      canaryService: Name(),
      /** The annotation prefix of the controller. */
      annotationPrefix: z.string().min(1).default("nginx.ingress.kubernetes.io"),
    })
    .strict(),
  /**
   * Blue/green: the active and preview Services select one of two Deployments by a label the
   * target owns; the Deployments' pod templates carry it (`<label>: <Deployment name>`).
   */
  z
    .object({
      type: z.literal("blue-green"),
      activeService: Name(),
      previewService: Name(),
      /** The label whose value (a Deployment's name) the Services select. */
      label: LabelKey().default("rollouts.sfn/deployment"),
      /** Pods of the candidate before promotion. @default the replicas */
      previewReplicaCount: Replicas().optional(),
    })
    .strict(),
]);

export const KubernetesSettingsSchema = z
  .object({
    type: z.literal("kubernetes"),
    /** The API server, `https://…`. Absent: the kubeconfig secret's. */
    server: z.url({ protocol: /^https?$/ }).optional(),
    /** The cluster CA, base64 of the PEM (EKS's `certificateAuthority.data`). */
    certificateAuthority: z.string().min(1).optional(),
    auth: KubeAuthSchema,
    namespace: Name().default("default"),
    /**
     * The two Deployments. Canary routers: `stable` keeps the stable version, `canary` runs the
     * candidate. Blue/green: two slots; the active Service selects one, the candidate goes to the
     * other.
     */
    stableDeployment: Name(),
    canaryDeployment: Name(),
    /** The container whose image the candidate replaces. @default the first container */
    container: z.string().min(1).optional(),
    router: KubeRouterSchema.default({ type: "pods" }),
    /** The rollout's pods (Argo's `spec.replicas`). @default the stable Deployment's at prepare */
    replicas: Replicas().positive().optional(),
    /** Surge pods of a basic canary (Argo's `maxSurge`, resolved). */
    maxSurge: Replicas().default(1),
    progressDeadlineSeconds: WaitSeconds().default(600),
    pollSeconds: WaitSeconds().default(10),
    /** Seconds one API call may take before it fails (retried by the workflow). */
    requestTimeoutSeconds: z.number().int().positive().max(50).default(10),
  })
  .strict()
  .refine((s) => s.stableDeployment !== s.canaryDeployment, {
    message: "stableDeployment and canaryDeployment must differ",
    path: ["canaryDeployment"],
  })
  .refine((s) => s.server !== undefined || s.auth.type === "kubeconfig-secret", {
    message: "give the API server's URL (only a kubeconfig secret carries its own)",
    path: ["server"],
  })
  .refine(
    (s) =>
      !("stableService" in s.router) ||
      !("canaryService" in s.router) ||
      s.router.stableService !== s.router.canaryService,
    { message: "stableService and canaryService must differ", path: ["router", "canaryService"] },
  )
  .refine((s) => s.router.type !== "blue-green" || s.router.activeService !== s.router.previewService, {
    message: "activeService and previewService must differ",
    path: ["router", "previewService"],
  });

export type KubernetesSettings = z.infer<typeof KubernetesSettingsSchema>;
