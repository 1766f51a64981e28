/**
 * gRPC server reflection (`grpc.reflection.v1` and `v1alpha`, the same messages in two packages),
 * so `buf curl`, grpcurl, Postman and the like can call AppService with no `.proto` in hand. It
 * answers from the descriptors appwatch serves (`appRegistry`), each file with the files it
 * imports, as grpc-go does: an import goes out once per stream. Reflection is a bidirectional stream,
 * so it needs HTTP/2: it is served on the gRPC listener (`--grpc-port`), not on the HTTP/1.1 port.
 *
 * @example List the methods, then call List, with buf curl
 * ```sh
 * buf curl --protocol grpc --http2-prior-knowledge --list-methods http://127.0.0.1:8081
 * buf curl --protocol grpc --http2-prior-knowledge -d '{}' http://127.0.0.1:8081/flyteidl2.app.AppService/List
 * ```
 * @module
 */
import { createFileRegistry, type DescFile, type DescService, type FileRegistry, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { appRegistry } from "../../flyte/proto/app_service_pb.ts";
import { file } from "../../flyte/proto/descriptor.ts";

/** The reflection file of `pkg` (grpc/reflection/v1/reflection.proto's field numbers). */
function reflectionFile(pkg: string) {
  const P = `.${pkg}`;
  return file(`grpc/reflection/${pkg.split(".").pop()}/reflection.proto`, pkg, [], [
    {
      name: "ServerReflectionRequest",
      fields: [
        ["host", 1, "string"],
        ["file_by_filename", 3, "string", { oneof: "message_request" }],
        ["file_containing_symbol", 4, "string", { oneof: "message_request" }],
        ["file_containing_extension", 5, `${P}.ExtensionRequest`, { oneof: "message_request" }],
        ["all_extension_numbers_of_type", 6, "string", { oneof: "message_request" }],
        ["list_services", 7, "string", { oneof: "message_request" }],
      ],
    },
    { name: "ExtensionRequest", fields: [["containing_type", 1, "string"], ["extension_number", 2, "int32"]] },
    {
      name: "ServerReflectionResponse",
      fields: [
        ["valid_host", 1, "string"],
        ["original_request", 2, `${P}.ServerReflectionRequest`],
        ["file_descriptor_response", 4, `${P}.FileDescriptorResponse`, { oneof: "message_response" }],
        ["all_extension_numbers_response", 5, `${P}.ExtensionNumberResponse`, { oneof: "message_response" }],
        ["list_services_response", 6, `${P}.ListServiceResponse`, { oneof: "message_response" }],
        ["error_response", 7, `${P}.ErrorResponse`, { oneof: "message_response" }],
      ],
    },
    { name: "FileDescriptorResponse", fields: [["file_descriptor_proto", 1, "bytes", { repeated: true }]] },
    { name: "ExtensionNumberResponse", fields: [["base_type_name", 1, "string"], ["extension_number", 2, "int32", { repeated: true }]] },
    { name: "ListServiceResponse", fields: [["service", 1, `${P}.ServiceResponse`, { repeated: true }]] },
    { name: "ServiceResponse", fields: [["name", 1, "string"]] },
    { name: "ErrorResponse", fields: [["error_code", 1, "int32"], ["error_message", 2, "string"]] },
  ], [], [{
    name: "ServerReflection",
    methods: [{ name: "ServerReflectionInfo", input: `${P}.ServerReflectionRequest`, output: `${P}.ServerReflectionResponse`, clientStreaming: true, serverStreaming: true }],
  }]);
}

/** The two reflection packages served; v1alpha is what older clients ask for. */
export const REFLECTION_PACKAGES = ["grpc.reflection.v1", "grpc.reflection.v1alpha"] as const;

/** Every file reflection describes: AppService's closure and the two reflection files. */
const registry: FileRegistry = createFileRegistry(appRegistry, ...REFLECTION_PACKAGES.map((pkg) => createFileRegistry(reflectionFile(pkg), () => undefined)));

/** The request as connect-es hands it over (the oneof `message_request`). */
interface ReflectionRequest {
  host: string;
  messageRequest:
    | { case: "fileByFilename" | "fileContainingSymbol" | "allExtensionNumbersOfType" | "listServices"; value: string }
    | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
    | { case: undefined; value?: undefined };
}

/** The file that declares `symbol`: a service, method, message (nested too), enum or field. */
function fileOfSymbol(symbol: string): DescFile | undefined {
  const desc = registry.get(symbol);
  if (desc && desc.kind !== "extension") return desc.file;
  // `pkg.Service.Method` or `pkg.Message.field`: the parent, if it has that member.
  const dot = symbol.lastIndexOf(".");
  const parent = dot > 0 ? registry.get(symbol.slice(0, dot)) : undefined;
  const member = symbol.slice(dot + 1);
  if (parent?.kind === "service" && parent.methods.some((m) => m.name === member)) return parent.file;
  if (parent?.kind === "message" && parent.fields.some((f) => f.name === member)) return parent.file;
  return undefined;
}

/** One reflection stream: answers each request in order. */
export async function* reflect(requests: AsyncIterable<ReflectionRequest>): AsyncGenerator<Record<string, unknown>> {
  const sent = new Set<string>();
  // The asked-for file always; of its imports, those not sent yet on this stream (grpc-go's rule).
  const withImports = (f: DescFile): Uint8Array[] => {
    const out: Uint8Array[] = [];
    const visit = (d: DescFile) => {
      if (out.length > 0 && sent.has(d.name)) return;
      sent.add(d.name);
      out.push(toBinary(FileDescriptorProtoSchema, d.proto));
      d.dependencies.forEach(visit);
    };
    visit(f);
    return out;
  };
  const notFound = (what: string) => ({ case: "errorResponse", value: { errorCode: Code.NotFound, errorMessage: `${what} not found` } });
  for await (const req of requests) {
    const r = req.messageRequest;
    let response: { case: string; value: unknown };
    switch (r.case) {
      case "listServices":
        response = { case: "listServicesResponse", value: { service: [...registry].filter((d) => d.kind === "service").map((s) => ({ name: s.typeName })) } };
        break;
      case "fileByFilename": {
        const f = registry.getFile(r.value);
        response = f ? { case: "fileDescriptorResponse", value: { fileDescriptorProto: withImports(f) } } : notFound(`file ${JSON.stringify(r.value)}`);
        break;
      }
      case "fileContainingSymbol": {
        const f = fileOfSymbol(r.value);
        response = f ? { case: "fileDescriptorResponse", value: { fileDescriptorProto: withImports(f) } } : notFound(`symbol ${JSON.stringify(r.value)}`);
        break;
      }
      case "fileContainingExtension":
        // No file appwatch serves declares extensions.
        response = notFound(`extension ${r.value.extensionNumber} of ${JSON.stringify(r.value.containingType)}`);
        break;
      case "allExtensionNumbersOfType":
        response = registry.getMessage(r.value)
          ? { case: "allExtensionNumbersResponse", value: { baseTypeName: r.value, extensionNumber: [] } }
          : notFound(`type ${JSON.stringify(r.value)}`);
        break;
      default:
        // grpc-go ends the stream the same way.
        throw new ConnectError("invalid MessageRequest: none of its fields is set", Code.InvalidArgument);
    }
    yield { validHost: req.host, originalRequest: req, messageResponse: response };
  }
}

/** The `ServerReflection` service of one of the {@link REFLECTION_PACKAGES} (for clients and tests). */
export function reflectionService(pkg: (typeof REFLECTION_PACKAGES)[number]): DescService {
  const service = registry.getService(`${pkg}.ServerReflection`);
  if (!service) throw new Error(`descriptor ${pkg}.ServerReflection missing`);
  return service;
}

/** Registers both reflection services on `router`, behind the same interceptors as AppService. */
export function reflectionRoutes(router: ConnectRouter, options: { interceptors?: Interceptor[] } = {}): void {
  for (const pkg of REFLECTION_PACKAGES) router.service(reflectionService(pkg), { serverReflectionInfo: reflect } as never, options);
}
