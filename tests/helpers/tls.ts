/**
 * Test PKI made with the `openssl` CLI at test time, and the HTTPS test server
 * (`tests/fixtures/tls-server.mjs`) run as a Node child process, so the same
 * server tests every runtime's client.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** A certificate and its private key (PEM text). */
export interface CertPair {
  cert: string;
  key: string;
  certFile: string;
  keyFile: string;
}

/** Everything the TLS tests need. */
export interface TestPki {
  dir: string;
  /** CA that signs the server and client certificates. */
  ca: string;
  /** An unrelated CA (must not be trusted). */
  otherCa: string;
  /** Client certificates, CN = client-pkcs8 / client-pkcs1 / client-ec. */
  clients: { pkcs8: CertPair; pkcs1: CertPair; ec: CertPair };
  remove(): Promise<void>;
}

function openssl(args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile("openssl", args, { cwd }, (err, _stdout, stderr) => {
      if (!err) return resolve();
      if ((err as { code?: unknown }).code === "ENOENT") {
        reject(
          new Error(
            "the openssl CLI was not found on PATH; tests/tls.test.ts needs it to create test certificates (install openssl, e.g. apt-get install openssl)",
          ),
        );
      } else {
        reject(new Error(`openssl ${args.join(" ")} failed: ${String(stderr).trim() || err.message}`));
      }
    });
  });
}

const serial = () => `0x${Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0")).join("")}`;

async function makeCa(dir: string, name: string): Promise<void> {
  await openssl([
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", `${name}.key`, "-out", `${name}.crt`, "-days", "2", "-subj", `/CN=appwatch-test-${name}`,
    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
  ], dir);
}

/** Signs `<name>.key` into `<name>.crt` with ca.crt. */
async function signLeaf(dir: string, name: string, cn: string, ext: string): Promise<void> {
  await writeFile(join(dir, `${name}.ext`), ext);
  await openssl(["req", "-new", "-key", `${name}.key`, "-subj", `/CN=${cn}`, "-out", `${name}.csr`], dir);
  await openssl([
    "x509", "-req", "-in", `${name}.csr`, "-CA", "ca.crt", "-CAkey", "ca.key", "-set_serial", serial(),
    "-days", "2", "-out", `${name}.crt`, "-extfile", `${name}.ext`,
  ], dir);
}

const SERVER_EXT = (san: string) =>
  `basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=${san}\n`;
const CLIENT_EXT = "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n";

/** Creates the PKI in a temp dir (a few hundred ms). */
export async function makePki(): Promise<TestPki> {
  const dir = await mkdtemp(join(tmpdir(), "appwatch-tls-"));
  try {
    await Promise.all([makeCa(dir, "ca"), makeCa(dir, "other-ca")]);
    const ecKey = (name: string) =>
      openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", `${name}.key`], dir);
    await Promise.all([
      ecKey("server").then(() => signLeaf(dir, "server", "localhost", SERVER_EXT("DNS:localhost,IP:127.0.0.1"))),
      ecKey("named").then(() => signLeaf(dir, "named", "kube.internal", SERVER_EXT("DNS:kube.internal"))),
      // RSA PKCS#8 ("BEGIN PRIVATE KEY")
      openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "client-pkcs8.key"], dir)
        .then(() => signLeaf(dir, "client-pkcs8", "client-pkcs8", CLIENT_EXT)),
      // RSA PKCS#1 ("BEGIN RSA PRIVATE KEY", kubeadm/kind style)
      openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "client-pkcs1.p8"], dir)
        .then(() => openssl(["rsa", "-in", "client-pkcs1.p8", "-traditional", "-out", "client-pkcs1.key"], dir))
        .then(() => signLeaf(dir, "client-pkcs1", "client-pkcs1", CLIENT_EXT)),
      // EC SEC1 ("BEGIN EC PRIVATE KEY", k3s style)
      openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "client-ec.key"], dir)
        .then(() => signLeaf(dir, "client-ec", "client-ec", CLIENT_EXT)),
    ]);
    const pair = async (name: string): Promise<CertPair> => ({
      cert: await readFile(join(dir, `${name}.crt`), "utf8"),
      key: await readFile(join(dir, `${name}.key`), "utf8"),
      certFile: join(dir, `${name}.crt`),
      keyFile: join(dir, `${name}.key`),
    });
    return {
      dir,
      ca: await readFile(join(dir, "ca.crt"), "utf8"),
      otherCa: await readFile(join(dir, "other-ca.crt"), "utf8"),
      clients: { pkcs8: await pair("client-pkcs8"), pkcs1: await pair("client-pkcs1"), ec: await pair("client-ec") },
      remove: () => rm(dir, { recursive: true, force: true }),
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** The running test server. */
export interface TlsTestServer {
  ports: { main: number; mtls: number; named: number };
  close(): Promise<void>;
}

/** Starts `tests/fixtures/tls-server.mjs` with `node` (always on PATH). */
export function startTlsServer(pki: TestPki): Promise<TlsTestServer> {
  const script = fileURLToPath(new URL("../fixtures/tls-server.mjs", import.meta.url));
  const child = spawn("node", [script, pki.dir], { stdio: ["pipe", "pipe", "pipe"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let stderr = "";
  child.stderr?.on("data", (c: Uint8Array) => (stderr += new TextDecoder().decode(c)));
  return new Promise<TlsTestServer>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`TLS test server did not start within 10 s: ${stderr}`));
    }, 10_000);
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot start node for the TLS test server: ${err.message}`));
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`TLS test server exited with ${code}: ${stderr}`));
    });
    child.stdout?.on("data", (c: Uint8Array) => {
      out += new TextDecoder().decode(c);
      const nl = out.indexOf("\n");
      if (nl < 0) return;
      clearTimeout(timer);
      const ports = JSON.parse(out.slice(0, nl)) as TlsTestServer["ports"];
      resolve({
        ports,
        close: async () => {
          child.stdin?.end();
          const killer = setTimeout(() => child.kill("SIGKILL"), 2_000);
          await exited;
          clearTimeout(killer);
        },
      });
    });
  });
}
