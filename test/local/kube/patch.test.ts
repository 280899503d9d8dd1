import { describe, expect, it } from "vitest";
import {
  applyJsonPatch,
  decodeJsonPatch,
  type Json,
  JsonPatchError,
  mergePatch,
} from "../../../local/kube/patch.ts";
import { strategicMergePatch } from "../../../local/kube/strategic-merge.ts";

/** RFC 6902 with the examples of its Appendix A, RFC 7386 with those of its Appendix A. */
function jsonPatch(doc: Json, ops: unknown): Json {
  return applyJsonPatch(doc, decodeJsonPatch(ops));
}

describe("JSON Patch (RFC 6902)", () => {
  it.each<[string, Json, unknown, Json]>([
    [
      "A.1 add an object member",
      { foo: "bar" },
      [{ op: "add", path: "/baz", value: "qux" }],
      { baz: "qux", foo: "bar" },
    ],
    [
      "A.2 add an array element",
      { foo: ["bar", "baz"] },
      [{ op: "add", path: "/foo/1", value: "qux" }],
      { foo: ["bar", "qux", "baz"] },
    ],
    [
      "A.3 remove an object member",
      { baz: "qux", foo: "bar" },
      [{ op: "remove", path: "/baz" }],
      { foo: "bar" },
    ],
    [
      "A.4 remove an array element",
      { foo: ["bar", "qux", "baz"] },
      [{ op: "remove", path: "/foo/1" }],
      { foo: ["bar", "baz"] },
    ],
    [
      "A.5 replace a value",
      { baz: "qux", foo: "bar" },
      [{ op: "replace", path: "/baz", value: "boo" }],
      { baz: "boo", foo: "bar" },
    ],
    [
      "A.6 move a value",
      { foo: { bar: "baz", waldo: "fred" }, qux: { corge: "grault" } },
      [{ op: "move", from: "/foo/waldo", path: "/qux/thud" }],
      { foo: { bar: "baz" }, qux: { corge: "grault", thud: "fred" } },
    ],
    [
      "A.7 move an array element",
      { foo: ["all", "grass", "cows", "eat"] },
      [{ op: "move", from: "/foo/1", path: "/foo/3" }],
      { foo: ["all", "cows", "eat", "grass"] },
    ],
    [
      "A.8 test success",
      { baz: "qux", foo: ["a", 2, "c"] },
      [
        { op: "test", path: "/baz", value: "qux" },
        { op: "test", path: "/foo/1", value: 2 },
      ],
      { baz: "qux", foo: ["a", 2, "c"] },
    ],
    [
      "A.10 add a nested member object",
      { foo: "bar" },
      [{ op: "add", path: "/child", value: { grandchild: {} } }],
      { foo: "bar", child: { grandchild: {} } },
    ],
    [
      "A.14 ~ escape ordering",
      { "/": 9, "~1": 10 },
      [{ op: "test", path: "/~01", value: 10 }],
      { "/": 9, "~1": 10 },
    ],
    [
      "A.16 add an array value",
      { foo: ["bar"] },
      [{ op: "add", path: "/foo/-", value: ["abc", "def"] }],
      { foo: ["bar", ["abc", "def"]] },
    ],
    ["copy", { a: { b: 1 } }, [{ op: "copy", from: "/a", path: "/c" }], { a: { b: 1 }, c: { b: 1 } }],
    ["replace the root", { a: 1 }, [{ op: "replace", path: "", value: [1] }], [1]],
  ])("%s", (_name, doc, ops, expected) => {
    expect(jsonPatch(doc, ops)).toEqual(expected);
  });

  it.each<[string, Json, unknown, string]>([
    [
      "A.9 test failure",
      { baz: "qux" },
      [{ op: "test", path: "/baz", value: "bar" }],
      "testing value /baz failed: test failed",
    ],
    [
      "A.12 add to a nonexistent target",
      { foo: "bar" },
      [{ op: "add", path: "/baz/bat", value: "qux" }],
      'path "/baz/bat" does not exist',
    ],
    [
      "A.15 comparing strings and numbers",
      { "/": 9, "~1": 10 },
      [{ op: "test", path: "/~01", value: "10" }],
      "testing value /~01 failed: test failed",
    ],
    ["remove a missing member", { a: 1 }, [{ op: "remove", path: "/b" }], 'path "/b" does not exist'],
    [
      "replace a missing member",
      { a: 1 },
      [{ op: "replace", path: "/b", value: 2 }],
      'path "/b" does not exist',
    ],
    [
      "index past the end",
      { a: [1] },
      [{ op: "add", path: "/a/2", value: 2 }],
      'array index 2 out of bounds in "/a/2"',
    ],
    [
      "leading zero index",
      { a: [1, 2] },
      [{ op: "remove", path: "/a/01" }],
      'invalid array index "01" in "/a/01"',
    ],
    [
      "move into its own child",
      { a: { b: {} } },
      [{ op: "move", from: "/a", path: "/a/b/c" }],
      'cannot move "/a" into its own child "/a/b/c"',
    ],
  ])("%s fails", (_name, doc, ops, message) => {
    expect(() => jsonPatch(doc, ops)).toThrow(new JsonPatchError(message, "apply"));
  });

  it("is atomic: a failing operation leaves the document as it was", () => {
    const doc = { spec: { replicas: 1 } };
    expect(() =>
      jsonPatch(doc, [
        { op: "replace", path: "/spec/replicas", value: 5 },
        { op: "test", path: "/spec/replicas", value: 1 },
      ]),
    ).toThrow(/test failed/);
    expect(doc).toEqual({ spec: { replicas: 1 } });
  });

  it.each([
    [{ op: "add", path: "/a" }, "operation 0 (add): missing value"],
    [{ op: "frobnicate", path: "/a" }, 'operation 0: unknown op "frobnicate"'],
    [{ op: "move", path: "/a" }, "operation 0 (move): missing from"],
    [{ op: "remove" }, "operation 0 (remove): missing path"],
  ])("refuses a malformed operation %j", (op, message) => {
    expect(() => decodeJsonPatch([op])).toThrow(new JsonPatchError(message, "decode"));
  });

  it("refuses a document that is not an array", () => {
    expect(() => decodeJsonPatch({ op: "add" })).toThrow("a JSON patch must be an array of operations");
  });
});

describe("JSON Merge Patch (RFC 7386)", () => {
  it.each<[Json, Json, Json]>([
    [{ a: "b" }, { a: "c" }, { a: "c" }],
    [{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
    [{ a: "b" }, { a: null }, {}],
    [{ a: "b", b: "c" }, { a: null }, { b: "c" }],
    [{ a: ["b"] }, { a: "c" }, { a: "c" }],
    [{ a: "c" }, { a: ["b"] }, { a: ["b"] }],
    [{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
    [{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
    [
      ["a", "b"],
      ["c", "d"],
      ["c", "d"],
    ],
    [{ a: "b" }, ["c"], ["c"]],
    [{ a: "foo" }, null, null],
    [{ a: "foo" }, "bar", "bar"],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: "b", c: null }, { a: "b" }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ])("%j + %j", (target, patch, expected) => {
    expect(mergePatch(target, patch)).toEqual(expected);
  });
});

describe("strategic merge patch", () => {
  const deployment: Json = {
    spec: {
      replicas: 3,
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1 } },
      template: {
        spec: {
          containers: [
            {
              name: "app",
              image: "web:v1",
              ports: [{ containerPort: 8080 }],
              env: [{ name: "A", value: "1" }],
            },
            { name: "sidecar", image: "side:v1" },
          ],
        },
      },
    },
    metadata: { finalizers: ["a"] },
  };

  it("merges containers by name: the other fields and containers stay", () => {
    const out = strategicMergePatch(deployment, {
      spec: { template: { spec: { containers: [{ name: "app", image: "web:v2" }] } } },
    }) as { spec: { template: { spec: { containers: unknown[] } } } };
    expect(out.spec.template.spec.containers).toEqual([
      { name: "app", image: "web:v2", ports: [{ containerPort: 8080 }], env: [{ name: "A", value: "1" }] },
      { name: "sidecar", image: "side:v1" },
    ]);
  });

  it("honours $patch: delete, $setElementOrder, $retainKeys, $deleteFromPrimitiveList and merged primitive lists", () => {
    const out = strategicMergePatch(deployment, {
      metadata: { finalizers: ["b"], "$deleteFromPrimitiveList/finalizers": ["a"] },
      spec: {
        strategy: { $retainKeys: ["type"], type: "Recreate" },
        template: {
          spec: {
            "$setElementOrder/containers": [{ name: "new" }, { name: "app" }],
            containers: [
              { name: "sidecar", $patch: "delete" },
              { name: "new", image: "n:1" },
            ],
          },
        },
      },
    }) as {
      metadata: unknown;
      spec: { strategy: unknown; template: { spec: { containers: Array<{ name: string }> } } };
    };
    expect(out.metadata).toEqual({ finalizers: ["b"] });
    expect(out.spec.strategy).toEqual({ type: "Recreate" });
    expect(out.spec.template.spec.containers.map((c) => c.name)).toEqual(["new", "app"]);
  });

  it("replaces a list without a merge key and a map under $patch: replace", () => {
    const out = strategicMergePatch(
      { spec: { args: ["a", "b"], m: { x: 1, y: 2 } } },
      {
        spec: { args: ["c"], m: { $patch: "replace", z: 3 } },
      },
    );
    expect(out).toEqual({ spec: { args: ["c"], m: { z: 3 } } });
  });

  it("replaces a list under a field named as an inherited member (constructor) as any list without a merge key", () => {
    const out = strategicMergePatch(
      { metadata: { annotations: {} }, constructor: [{ name: "a" }, { name: "b" }] },
      { constructor: [{ name: "c" }] },
    );
    expect(out).toEqual({ metadata: { annotations: {} }, constructor: [{ name: "c" }] });
  });

  it("merges a Service's ports by port", () => {
    const out = strategicMergePatch(
      {
        spec: {
          ports: [
            { port: 80, targetPort: 8080, name: "http" },
            { port: 443, name: "https" },
          ],
        },
      },
      { spec: { ports: [{ port: 80, targetPort: 9090 }] } },
    );
    expect(out).toEqual({
      spec: {
        ports: [
          { port: 80, targetPort: 9090, name: "http" },
          { port: 443, name: "https" },
        ],
      },
    });
  });
});
