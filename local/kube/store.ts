import { randomUUID } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import type { Clock } from "../../functions/clock.ts";
import type { Json } from "./patch.ts";
import { groupVersion, RESOURCE_TYPES, type ResourceType, storeKey } from "./resources.ts";
import { matches, type Requirement } from "./selector.ts";
import { alreadyExists, conflict, notFound } from "./status.ts";

/**
 * The objects of the local Kubernetes API, in memory, with the API server's bookkeeping:
 * `resourceVersion` from one global counter (every write takes the next value, so a stale one is
 * detected on any object), `uid`, `creationTimestamp`, `generation` bumped when anything but
 * metadata and status changes, and the `status` subresource split (a write to the object keeps
 * its status, a write to its status keeps the rest). Every read and write copies, so nobody holds
 * a reference into the store.
 */

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: Array<{
    apiVersion: string;
    kind: string;
    name: string;
    uid: string;
    controller?: boolean;
  }>;
  [key: string]: Json | undefined;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: { [key: string]: Json };
  status?: { [key: string]: Json };
  [key: string]: Json | ObjectMeta | undefined;
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED";

export interface StoreEvent {
  type: WatchEventType;
  resource: ResourceType;
  object: KubeObject;
}

export interface WriteOptions {
  /** `dryRun=All`: everything is checked and the answer computed, nothing is stored. */
  dryRun?: boolean;
}

/** Which part of an object an update writes. */
export type UpdatePart = "object" | "status";

const NAMESPACES = RESOURCE_TYPES.find((t) => t.resource === "namespaces")!;

function objectKey(namespace: string | undefined, name: string): string {
  return `${namespace ?? ""}/${name}`;
}

/** Seconds-precision RFC 3339, as `metav1.Time` marshals. */
export function kubeTime(epochMs: number): string {
  return new Date(Math.floor(epochMs / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** What an object is without its metadata and status: a change here bumps `generation`. */
function specOf(object: KubeObject): Record<string, unknown> {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = object;
  return rest;
}

export class KubeStore {
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  readonly #listeners = new Set<(event: StoreEvent) => void>();
  #version = 0;

  constructor(readonly clock: Clock) {}

  /** The last resourceVersion written, as lists answer it. */
  resourceVersion(): string {
    return String(this.#version);
  }

  #bucket(type: ResourceType): Map<string, KubeObject> {
    const key = storeKey(type);
    let bucket = this.#objects.get(key);
    if (!bucket) {
      bucket = new Map();
      this.#objects.set(key, bucket);
    }
    return bucket;
  }

  /** The object as the given version of its resource presents it. */
  #present(type: ResourceType, object: KubeObject): KubeObject {
    const copy = structuredClone(object);
    copy.apiVersion = groupVersion(type);
    copy.kind = type.kind;
    return copy;
  }

  /** A copy of one object, `undefined` when absent. */
  find(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    const found = this.#bucket(type).get(objectKey(type.namespaced ? namespace : undefined, name));
    return found ? this.#present(type, found) : undefined;
  }

  /** A copy of one object, or the API server's NotFound. */
  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const found = this.find(type, namespace, name);
    if (!found) throw notFound(type, name);
    return found;
  }

  /** Objects of a resource, in one namespace or all, whose labels match, sorted by namespace and name. */
  list(type: ResourceType, namespace?: string, selector: readonly Requirement[] = []): KubeObject[] {
    const out: KubeObject[] = [];
    for (const object of this.#bucket(type).values()) {
      if (type.namespaced && namespace !== undefined && object.metadata.namespace !== namespace) continue;
      if (!matches(object.metadata.labels, selector)) continue;
      out.push(this.#present(type, object));
    }
    return out.sort((a, b) =>
      objectKey(a.metadata.namespace, a.metadata.name).localeCompare(
        objectKey(b.metadata.namespace, b.metadata.name),
      ),
    );
  }

  #requireNamespace(type: ResourceType, namespace: string | undefined): void {
    if (!type.namespaced) return;
    if (namespace === undefined || !this.#bucket(NAMESPACES).has(objectKey(undefined, namespace))) {
      throw notFound(NAMESPACES, namespace ?? "");
    }
  }

  #nextVersion(): string {
    this.#version += 1;
    return String(this.#version);
  }

  #emit(type: WatchEventType, resource: ResourceType, object: KubeObject): void {
    for (const listener of this.#listeners)
      listener({ type, resource, object: this.#present(resource, object) });
  }

  /** Creates an object: AlreadyExists (409) when the name is taken, NotFound when its namespace is. */
  create(
    type: ResourceType,
    namespace: string | undefined,
    body: KubeObject,
    options: WriteOptions = {},
  ): KubeObject {
    this.#requireNamespace(type, namespace);
    const bucket = this.#bucket(type);
    const name = body.metadata.name;
    const key = objectKey(type.namespaced ? namespace : undefined, name);
    if (bucket.has(key)) throw alreadyExists(type, name);
    const object = structuredClone(body);
    const {
      resourceVersion: _rv,
      uid: _uid,
      generation: _gen,
      creationTimestamp: _ct,
      ...meta
    } = object.metadata;
    object.metadata = {
      ...meta,
      name,
      ...(type.namespaced ? { namespace } : {}),
      uid: randomUUID(),
      resourceVersion: options.dryRun ? undefined : this.#nextVersion(),
      generation: 1,
      creationTimestamp: kubeTime(this.clock.now()),
    };
    if (object.metadata.resourceVersion === undefined) delete object.metadata.resourceVersion;
    object.apiVersion = groupVersion(type);
    object.kind = type.kind;
    if (type.resource === "namespaces") object.status = { phase: "Active" };
    if (options.dryRun) return this.#present(type, object);
    bucket.set(key, object);
    this.#emit("ADDED", type, object);
    return this.#present(type, object);
  }

  /**
   * Replaces an object (or its status): NotFound when absent, Conflict (409) when the body names
   * a `resourceVersion` that is not the stored one (no `resourceVersion`: an unconditional write).
   * A write that changes nothing takes no new resourceVersion, as the API server skips it.
   */
  update(
    type: ResourceType,
    namespace: string | undefined,
    body: KubeObject,
    part: UpdatePart = "object",
    options: WriteOptions = {},
  ): KubeObject {
    const bucket = this.#bucket(type);
    const name = body.metadata.name;
    const key = objectKey(type.namespaced ? namespace : undefined, name);
    const current = bucket.get(key);
    if (!current) throw notFound(type, name);
    const asked = body.metadata.resourceVersion;
    if (asked !== undefined && asked !== "" && asked !== current.metadata.resourceVersion) {
      throw conflict(type, name);
    }
    let next: KubeObject;
    if (part === "status") {
      next = structuredClone(current);
      if (body.status === undefined) delete next.status;
      else next.status = structuredClone(body.status);
    } else {
      next = structuredClone(body);
      const { uid: _u, creationTimestamp: _c, generation: _g, resourceVersion: _r, ...meta } = body.metadata;
      next.metadata = {
        ...meta,
        name,
        ...(type.namespaced ? { namespace } : {}),
        uid: current.metadata.uid,
        resourceVersion: current.metadata.resourceVersion,
        generation: current.metadata.generation,
        creationTimestamp: current.metadata.creationTimestamp,
      };
      if (type.status) {
        if (current.status === undefined) delete next.status;
        else next.status = structuredClone(current.status);
      }
      if (
        !isDeepStrictEqual(
          specOf({ ...next, apiVersion: "", kind: "" }),
          specOf({ ...current, apiVersion: "", kind: "" }),
        )
      ) {
        next.metadata.generation = (current.metadata.generation ?? 1) + 1;
      }
    }
    next.apiVersion = current.apiVersion;
    next.kind = current.kind;
    if (isDeepStrictEqual(next, current)) return this.#present(type, current);
    if (options.dryRun) return this.#present(type, next);
    next.metadata.resourceVersion = this.#nextVersion();
    bucket.set(key, next);
    this.#emit("MODIFIED", type, next);
    return this.#present(type, next);
  }

  /** Deletes an object and answers it; deleting a namespace deletes what is in it. */
  delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    options: WriteOptions = {},
  ): KubeObject {
    const bucket = this.#bucket(type);
    const key = objectKey(type.namespaced ? namespace : undefined, name);
    const current = bucket.get(key);
    if (!current) throw notFound(type, name);
    if (options.dryRun) return this.#present(type, current);
    if (type.resource === "namespaces") {
      for (const inner of RESOURCE_TYPES) {
        if (!inner.namespaced) continue;
        for (const object of this.list(inner, name)) {
          if (this.#bucket(inner).delete(objectKey(name, object.metadata.name))) {
            this.#nextVersion();
            this.#emit("DELETED", inner, object);
          }
        }
      }
    }
    bucket.delete(key);
    const deleted = structuredClone(current);
    deleted.metadata.resourceVersion = this.#nextVersion();
    this.#emit("DELETED", type, deleted);
    return this.#present(type, deleted);
  }

  /** Calls `listener` after every stored change; returns what stops it. */
  subscribe(listener: (event: StoreEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
