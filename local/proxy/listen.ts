import type http from "node:http";
import type { AddressInfo } from "node:net";

/** Listens and resolves to `http://host:port` (IPv6 addresses in brackets) and the port. */
export async function listen(
  server: http.Server,
  port: number,
  host: string,
): Promise<{ url: string; port: number }> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return { url: `http://${shown}:${address.port}`, port: address.port };
}

/** Stops accepting connections, drops the open ones and resolves when closed. */
export function close(server: http.Server): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.close((err) => (err ? reject(err) : resolve()));
    server.closeAllConnections();
  });
}
