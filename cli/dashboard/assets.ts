import { readFileSync } from "node:fs";

/**
 * The files the pages need, shipped beside this module (`assets/`): one stylesheet and one small
 * script, read from disk once. Nothing is fetched from the network and nothing is built.
 */
export const ASSETS = {
  "dashboard.css": "text/css; charset=utf-8",
  "dashboard.js": "text/javascript; charset=utf-8",
} as const;
export type AssetName = keyof typeof ASSETS;

const cache = new Map<AssetName, string>();

export function asset(name: AssetName): string {
  let text = cache.get(name);
  if (text === undefined) {
    text = readFileSync(new URL(`./assets/${name}`, import.meta.url), "utf8");
    cache.set(name, text);
  }
  return text;
}
