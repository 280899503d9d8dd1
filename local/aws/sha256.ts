import { createHash, createHmac, type Hash, type Hmac } from "node:crypto";

type SourceData = string | ArrayBuffer | ArrayBufferView;

function bytes(data: SourceData): Buffer | string {
  if (typeof data === "string") return data;
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}

/**
 * SHA-256 (an HMAC when given a secret) for `@smithy/signature-v4` over Node's native crypto: the
 * local endpoints check a signature per request, and the pure-JS hash costs about a millisecond
 * each on a loaded machine.
 */
export class NodeSha256 {
  readonly #secret: SourceData | undefined;
  #hash: Hash | Hmac;

  constructor(secret?: SourceData) {
    this.#secret = secret;
    this.#hash = this.#fresh();
  }

  update(data: SourceData): void {
    this.#hash.update(bytes(data));
  }

  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.#hash.digest());
  }

  reset(): void {
    this.#hash = this.#fresh();
  }

  #fresh(): Hash | Hmac {
    return this.#secret === undefined ? createHash("sha256") : createHmac("sha256", bytes(this.#secret));
  }
}
