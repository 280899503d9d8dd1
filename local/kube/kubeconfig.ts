import { writeFile } from "node:fs/promises";
import { stringify } from "yaml";

/**
 * A kubeconfig for the local API, so `kubectl` and client libraries reach it as they reach a
 * cluster. The server does not authenticate: the user entry carries a token only because clients
 * expect one.
 */

/** The kubeconfig text for a server at `url` (`http://127.0.0.1:PORT`) with `namespace` as default. */
export function kubeconfigText(url: string, namespace = "default"): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "local", cluster: { server: url } }],
    users: [{ name: "local", user: { token: "local" } }],
    contexts: [{ name: "local", context: { cluster: "local", user: "local", namespace } }],
    "current-context": "local",
    preferences: {},
  });
}

/** Writes the kubeconfig to `path` (mode 0600, as kubectl writes its own) and returns the path. */
export async function writeKubeconfig(path: string, url: string, namespace?: string): Promise<string> {
  await writeFile(path, kubeconfigText(url, namespace), { mode: 0o600 });
  return path;
}
