import type { ResourceType } from "./resources.ts";
import type { KubeObject } from "./store.ts";

/**
 * The `Table` form (`meta.k8s.io/v1`) that `kubectl get` asks for with
 * `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`: the columns the API server prints for
 * Deployments (READY, UP-TO-DATE, AVAILABLE), ReplicaSets, pods and Services, and NAME and AGE
 * for the other kinds.
 */

/** Whether an Accept header asks for a Table. */
export function wantsTable(accept: string | undefined): boolean {
  return (accept ?? "").split(",").some((part) => {
    const params = part.split(";").map((p) => p.trim());
    return params.includes("as=Table") && params.includes("g=meta.k8s.io") && params.includes("v=v1");
  });
}

export const TABLE_CONTENT_TYPE = "application/json;as=Table;v=v1;g=meta.k8s.io";

/** `metav1`'s human durations: 45s, 3m20s, 17m, 5h30m, 2d4h, 40d. */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (h < 192) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  return `${d}d`;
}

interface Column {
  name: string;
  type: "string" | "integer";
  cell: (o: KubeObject, age: string, now: number) => string | number;
}

const num = (v: unknown) => (typeof v === "number" ? v : 0);

function columnsOf(type: ResourceType): Column[] {
  const name: Column = { name: "Name", type: "string", cell: (o) => o.metadata.name };
  const age: Column = { name: "Age", type: "string", cell: (_o, a) => a };
  switch (type.resource) {
    case "deployments":
      return [
        name,
        {
          name: "Ready",
          type: "string",
          cell: (o) =>
            `${num(o.status?.readyReplicas)}/${typeof o.spec?.replicas === "number" ? o.spec.replicas : 1}`,
        },
        { name: "Up-to-date", type: "integer", cell: (o) => num(o.status?.updatedReplicas) },
        { name: "Available", type: "integer", cell: (o) => num(o.status?.availableReplicas) },
        age,
      ];
    case "replicasets":
      return [
        name,
        { name: "Desired", type: "integer", cell: (o) => num(o.spec?.replicas) },
        { name: "Current", type: "integer", cell: (o) => num(o.status?.replicas) },
        { name: "Ready", type: "integer", cell: (o) => num(o.status?.readyReplicas) },
        age,
      ];
    case "pods":
      return [
        name,
        {
          name: "Ready",
          type: "string",
          cell: (o) => {
            const statuses = (o.status?.containerStatuses ?? []) as Array<{ ready?: boolean }>;
            return `${statuses.filter((s) => s.ready).length}/${statuses.length}`;
          },
        },
        { name: "Status", type: "string", cell: (o) => String(o.status?.phase ?? "Pending") },
        { name: "Restarts", type: "integer", cell: () => 0 },
        age,
      ];
    case "services":
      return [
        name,
        { name: "Type", type: "string", cell: (o) => String(o.spec?.type ?? "ClusterIP") },
        {
          name: "Port(s)",
          type: "string",
          cell: (o) =>
            ((o.spec?.ports ?? []) as Array<{ port?: number; protocol?: string }>)
              .map((p) => `${p.port}/${p.protocol ?? "TCP"}`)
              .join(",") || "<none>",
        },
        age,
      ];
    case "jobs":
      return [
        name,
        { name: "Status", type: "string", cell: jobStatusCell },
        {
          name: "Completions",
          type: "string",
          cell: (o) =>
            `${num(o.status?.succeeded)}/${typeof o.spec?.completions === "number" ? o.spec.completions : 1}`,
        },
        { name: "Duration", type: "string", cell: (o, _age, now) => jobDuration(o, now) },
        age,
      ];
    default:
      return [name, age];
  }
}

/** A Job's STATUS as kubectl prints it: its ending condition, else Running. */
function jobStatusCell(o: KubeObject): string {
  const conditions = (o.status?.conditions ?? []) as Array<{ type?: string; status?: string }>;
  const ended = conditions.find((c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True");
  return ended?.type ?? "Running";
}

/**
 * A Job's DURATION: from its start to its completion, to now while it runs, empty before it
 * starts and after it failed (a failed Job has no completionTime).
 */
function jobDuration(o: KubeObject, now: number): string {
  const start = Date.parse(String(o.status?.startTime ?? ""));
  if (Number.isNaN(start)) return "";
  const end = Date.parse(String(o.status?.completionTime ?? ""));
  if (!Number.isNaN(end)) return humanDuration(end - start);
  return jobStatusCell(o) === "Running" ? humanDuration(now - start) : "";
}

/** The Table of `objects`, their ages measured at `now`. */
export function toTable(type: ResourceType, objects: KubeObject[], now: number, resourceVersion: string) {
  const columns = columnsOf(type);
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: { resourceVersion },
    columnDefinitions: columns.map((c, i) => ({
      name: c.name,
      type: c.type,
      format: i === 0 ? "name" : "",
      description: "",
      priority: 0,
    })),
    rows: objects.map((o) => {
      const age = humanDuration(now - Date.parse(o.metadata.creationTimestamp ?? ""));
      return {
        cells: columns.map((c) => c.cell(o, age, now)),
        object: { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: o.metadata },
      };
    }),
  };
}
