import type { KubeApi } from "../../../local/kube/server.ts";

/** A JSON answer, read field by field in the assertions. */
// biome-ignore lint/suspicious/noExplicitAny: the assertions walk the API's JSON answers freely
export type JsonBody = Record<string, any>;

export interface Answer {
  status: number;
  body: JsonBody;
}

/** One request to the local API with `fetch`, as any HTTP client sends it. */
export async function kubeCall(
  kube: KubeApi,
  method: string,
  path: string,
  body?: unknown,
  contentType = "application/json",
): Promise<Answer> {
  const response = await fetch(`${kube.url}${path}`, {
    method,
    ...(body !== undefined
      ? {
          body: typeof body === "string" ? body : JSON.stringify(body),
          headers: { "content-type": contentType },
        }
      : {}),
  });
  return { status: response.status, body: (await response.json()) as JsonBody };
}

/** A Deployment of `replicas` pods of one container, selected by `app: name`. */
export function deployment(name: string, image = "registry/web:v1", replicas = 2) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, labels: { app: name, tier: "web" } },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "app", image, ports: [{ containerPort: 8080 }] }] },
      },
    },
  };
}
