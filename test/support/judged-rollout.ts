/**
 * A minimal Argo Rollout behind a traffic router, each weight followed by an analysis of one
 * template: the shape the judge tests load their templates with.
 */
export function judgedRollout(
  options: { template?: string; weights?: number[]; name?: string } = {},
): string {
  const steps = (options.weights ?? [25]).flatMap((w) => [
    `        - setWeight: ${w}`,
    `        - analysis: {templates: [{templateName: ${options.template ?? "gate"}}]}`,
  ]);
  return `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: ${options.name ?? "shop"}}
spec:
  template: {spec: {containers: [{name: app, image: "shop:2"}]}}
  strategy:
    canary:
      trafficRouting: {alb: {ingress: shop}}
      steps:
${steps.join("\n")}
`;
}
