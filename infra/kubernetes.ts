import { Stack } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as eks from "aws-cdk-lib/aws-eks";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type { Construct } from "constructs";
import type { KubernetesTarget } from "./props.ts";

/**
 * The CDK side of the `kubernetes` target: the settings embedded in the workflow (the cluster's
 * endpoint, CA and name, or the kubeconfig secret), the EKS access entries that map the
 * target-calling functions' roles to a Kubernetes group (bound by `examples/kubernetes-rbac.yaml`),
 * `secretsmanager:GetSecretValue` on exactly the kubeconfig secret, and the VPC of a private
 * endpoint. Nothing is applied to the cluster: its RBAC is the operator's, and the manifest says
 * exactly what to grant.
 */

/** The Kubernetes group the access entries map the functions' roles to. */
export const KUBERNETES_GROUP = "sfn-rollouts";

const CONSTRUCT_ONLY = [
  "cluster",
  "kubeconfigSecret",
  "kubernetesGroups",
  "vpc",
  "vpcSubnets",
  "securityGroups",
] as const;

/** The target's settings as embedded in the workflow, and the problems of the construct-only props. */
export function kubernetesSettings(
  target: KubernetesTarget,
  embedded: boolean,
): { settings: Record<string, unknown>; problems: string[] } {
  const settings: Record<string, unknown> = { ...target };
  for (const key of CONSTRUCT_ONLY) delete settings[key];
  const problems: string[] = [];
  const given = [
    target.cluster && "cluster",
    target.kubeconfigSecret && "kubeconfigSecret",
    target.auth && "auth",
  ].filter(Boolean);
  if (given.length !== 1) {
    problems.push(
      `target: give exactly one of cluster (an EKS cluster, reached with the functions' role) or kubeconfigSecret (a kubeconfig in Secrets Manager)${given.length > 1 ? `, not ${given.join(" and ")}` : ""}`,
    );
  }
  if (target.auth && !embedded) {
    problems.push(
      "target.auth: a token in the settings is visible in the workflow's definition; it is accepted only by the embedded runtime (use cluster or kubeconfigSecret)",
    );
  }
  if (target.cluster) {
    settings.server = target.cluster.clusterEndpoint;
    settings.certificateAuthority = target.cluster.clusterCertificateAuthorityData;
    settings.auth = { type: "eks", clusterName: target.cluster.clusterName };
  } else if (target.kubeconfigSecret) {
    settings.auth = { type: "kubeconfig-secret", secretArn: target.kubeconfigSecret.secretArn };
  }
  if ((target.vpcSubnets || target.securityGroups) && !target.vpc) {
    problems.push(
      "target.vpc: required with vpcSubnets or securityGroups (the cluster's VPC, for a private endpoint)",
    );
  }
  return { settings, problems };
}

/** `secretsmanager:GetSecretValue` on exactly the kubeconfig secret (and its key's decrypt, through Secrets Manager). */
export function kubernetesGrants(
  scope: Construct,
  target: KubernetesTarget,
): { statements: iam.PolicyStatement[]; wildcards: { resource: string; reason: string }[] } {
  const secret = target.kubeconfigSecret;
  const statements: iam.PolicyStatement[] = [];
  const wildcards: { resource: string; reason: string }[] = [];
  if (secret) {
    // A secret imported by name has no suffix in its ARN; Secrets Manager adds six characters.
    const arn = secret.secretFullArn ?? `${secret.secretArn}-??????`;
    statements.push(
      new iam.PolicyStatement({
        sid: "KubeconfigSecret",
        actions: ["secretsmanager:GetSecretValue"],
        resources: [arn],
      }),
    );
    if (secret.encryptionKey) {
      statements.push(
        new iam.PolicyStatement({
          sid: "KubeconfigSecretKey",
          actions: ["kms:Decrypt"],
          resources: [secret.encryptionKey.keyArn],
          conditions: {
            StringEquals: { "kms:ViaService": `secretsmanager.${Stack.of(scope).region}.amazonaws.com` },
          },
        }),
      );
    }
  }
  if (target.vpc) {
    statements.push(
      new iam.PolicyStatement({
        sid: "LambdaVpcNetworkInterfaces",
        // What AWSLambdaVPCAccessExecutionRole grants, inline: Lambda creates the functions' ENIs.
        actions: [
          "ec2:CreateNetworkInterface",
          "ec2:DescribeNetworkInterfaces",
          "ec2:DescribeSubnets",
          "ec2:DeleteNetworkInterface",
          "ec2:AssignPrivateIpAddresses",
          "ec2:UnassignPrivateIpAddresses",
        ],
        resources: ["*"],
      }),
    );
    wildcards.push({
      resource: "*",
      reason:
        "Lambda's network interfaces in the cluster's VPC: ec2:Describe* have no resource-level permissions and the interfaces' IDs are unknown before",
    });
  }
  return { statements, wildcards };
}

/**
 * An access entry per target-calling role on the cluster, mapping it to the Kubernetes group the
 * shipped RBAC binds. Entries are unique per cluster and principal, so a second rollout on the
 * same cluster reuses them (`created` remembers them per controller).
 */
export function kubernetesAccessEntries(
  scope: Construct,
  target: KubernetesTarget,
  roles: readonly iam.IRole[],
  created: Set<string>,
): eks.CfnAccessEntry[] {
  const cluster = target.cluster;
  if (!cluster) return [];
  const groups = [...(target.kubernetesGroups ?? [KUBERNETES_GROUP])];
  const key = Stack.of(scope).resolve(cluster.clusterName) as unknown;
  const id = JSON.stringify(key);
  if (created.has(id)) return [];
  created.add(id);
  return roles.map(
    (role, i) =>
      new eks.CfnAccessEntry(scope, `AccessEntry${i}`, {
        clusterName: cluster.clusterName,
        principalArn: role.roleArn,
        type: "STANDARD",
        kubernetesGroups: groups,
      }),
  );
}

/**
 * Puts the target-calling functions in the cluster's VPC (a private endpoint). The functions are
 * the controller's, shared by every rollout, so one VPC per controller: `current` is the one
 * already set, and another one is a problem.
 */
export function kubernetesVpc(
  scope: Construct,
  target: KubernetesTarget,
  functions: readonly lambda.Function[],
  current: { vpcId?: string; securityGroups?: ec2.ISecurityGroup[] },
): string | undefined {
  const vpc = target.vpc;
  if (!vpc) return undefined;
  const vpcId = JSON.stringify(Stack.of(scope).resolve(vpc.vpcId));
  if (current.vpcId !== undefined) {
    return current.vpcId === vpcId
      ? undefined
      : "target.vpc: the target-calling functions are shared by every rollout of a controller and are already in another VPC; use one controller per VPC";
  }
  current.vpcId = vpcId;
  const securityGroups = target.securityGroups
    ? [...target.securityGroups]
    : [
        new ec2.SecurityGroup(scope, "KubernetesClientSecurityGroup", {
          vpc,
          description:
            "sfn-rollouts functions calling the Kubernetes API (allow it on the security group of the cluster, port 443)",
          allowAllOutbound: true,
        }),
      ];
  current.securityGroups = securityGroups;
  const subnets = vpc.selectSubnets(target.vpcSubnets ?? { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS });
  for (const fn of functions) {
    const cfn = fn.node.defaultChild as lambda.CfnFunction;
    cfn.vpcConfig = {
      subnetIds: subnets.subnetIds,
      securityGroupIds: securityGroups.map((g) => g.securityGroupId),
    };
  }
  return undefined;
}
