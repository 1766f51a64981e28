/**
 * The AppService transports a client can use against a test service: Connect JSON and binary and
 * gRPC-Web on the HTTP port (connect-web, over fetch), and gRPC, gRPC-Web and Connect on
 * `--grpc-port` (connect-node, HTTP/2).
 */
import type { Transport } from "@connectrpc/connect";
import { createConnectTransport as webConnect, createGrpcWebTransport as webGrpcWeb } from "@connectrpc/connect-web";
import { createConnectTransport as nodeConnect, createGrpcTransport, createGrpcWebTransport as nodeGrpcWeb } from "@connectrpc/connect-node";
import type { TestService } from "./service.ts";

export const transports: Record<string, (s: TestService) => Transport> = {
  "Connect JSON": (s) => webConnect({ baseUrl: `${s.url}/internal` }),
  "Connect binary": (s) => webConnect({ baseUrl: `${s.url}/internal`, useBinaryFormat: true }),
  "gRPC-Web": (s) => webGrpcWeb({ baseUrl: `${s.url}/internal` }),
  "gRPC (--grpc-port)": (s) => createGrpcTransport({ baseUrl: `${s.grpcUrl}/internal` }),
  "gRPC-Web (--grpc-port)": (s) => nodeGrpcWeb({ baseUrl: `${s.grpcUrl}/internal`, httpVersion: "2" }),
  "Connect (--grpc-port)": (s) => nodeConnect({ baseUrl: `${s.grpcUrl}/internal`, httpVersion: "2" }),
};

// Bun's HTTP server (1.4.4) withholds a streamed response's header section until the body's first
// chunk (oven-sh/bun#33660, open), and a Watch body has no byte to send before its first event.
// Bun's node:http2 (--grpc-port) sends them at once.
export const bunHttpPort = (kind: string): boolean => "Bun" in globalThis && !kind.includes("--grpc-port");
