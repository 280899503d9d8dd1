import type { ServerResponse } from "node:http";
import { groupVersion } from "./resources.ts";
import type { ResourcePath } from "./rest.ts";
import { listFilter } from "./rest.ts";
import { matches } from "./selector.ts";
import type { KubeObject, KubeStore } from "./store.ts";

/**
 * `?watch=true` on a collection: a chunked stream of `{"type": "ADDED" | "MODIFIED" | "DELETED",
 * "object": …}` lines, as `kubectl get -w` and `kubectl rollout status` read it. Without a
 * `resourceVersion` (or with `0`) it starts with an ADDED event per existing object; with one it
 * sends only the changes after it (this store keeps no history, so changes between that version
 * and now are not replayed). `timeoutSeconds` ends it, as does closing the server.
 */
export function startWatch(
  store: KubeStore,
  path: ResourcePath,
  query: URLSearchParams,
  response: ServerResponse,
  /** Turns each event's object into what the client asked for (a Table for `kubectl get -w`). */
  present: (object: KubeObject) => unknown = (object) => object,
  contentType = "application/json",
): void {
  const filter = listFilter(path, query);
  const wanted = (object: KubeObject) =>
    (path.namespace === undefined || object.metadata.namespace === path.namespace) &&
    matches(object.metadata.labels, filter.labels) &&
    filter.fields(object);
  response.writeHead(200, { "content-type": contentType, "transfer-encoding": "chunked" });
  // The client waits for the headers before it reads events: send them even when no event is due.
  response.flushHeaders();
  const send = (type: string, object: KubeObject) => {
    object.apiVersion = groupVersion(path.type);
    response.write(`${JSON.stringify({ type, object: present(object) })}\n`);
  };
  const since = query.get("resourceVersion");
  const objects = store.list(path.type, path.namespace, filter.labels).filter(wanted);
  if (since === null || since === "" || since === "0") {
    for (const object of objects) send("ADDED", object);
  } else {
    // A client lists, then watches from the list's version: what changed in between (the
    // controller reconciles as each request arrives) is sent, as the API server's watch cache
    // replays it; otherwise \`kubectl rollout status\` would wait for a change it already missed.
    const after = Number(since);
    for (const object of objects)
      if (Number(object.metadata.resourceVersion) > after) send("MODIFIED", object);
  }
  const unsubscribe = store.subscribe((event) => {
    if (event.resource.group !== path.type.group || event.resource.resource !== path.type.resource) return;
    if (wanted(event.object)) send(event.type, event.object);
  });
  const timeout = Number(query.get("timeoutSeconds") ?? "1800");
  const timer = setTimeout(
    () => response.end(),
    (Number.isFinite(timeout) && timeout > 0 ? timeout : 1800) * 1000,
  );
  timer.unref();
  response.on("close", () => {
    clearTimeout(timer);
    unsubscribe();
  });
}
