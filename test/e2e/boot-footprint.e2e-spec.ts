import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CliRun, ensureBuilt, runCli } from '../support/built-cli';
import { readProbeFile } from '../support/probe-file';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { DYNAMODB_LOCAL, testDynamoDbEndpoint, testPostgresUrl, testRedisUrl, uniqueName, uniqueSchema } from '../support/services';

/**
 * What a server loads at boot follows its configuration (issue 14): the state backends' clients,
 * the OTLP and Prometheus exporters, the MCP SDK (with ajv and zod) and Entra's passport and jose
 * are loaded only by a server configured to use them; the AG-UI encoder and the OpenAI SDK on
 * first use (an AG-UI run, a streamed model call), never at boot. The installed
 * command runs with test/support/module-probe.cjs preloaded, which lists the CommonJS modules the
 * process holds once it listens. Structure only: how fast and how big is the benchmark's to say
 * (bench/run.ts).
 */
const ROOT = resolve(__dirname, '../..');
const PROBE = join(ROOT, 'test', 'support', 'module-probe.cjs');
/** The benchmark's agent (a model on TA_BASE_URL, no tools): nothing is called at boot. */
const BENCH_AGENTS = join(ROOT, 'bench', 'agents');
const MODEL_ENV = { TA_BASE_URL: 'http://127.0.0.1:9/v1', TA_API_KEY: 'x' };

/** Packages by the path part that names them in a module file. */
const OPTIONAL = {
  /**
   * Any of the AWS SDK: the DynamoDB store speaks DynamoDB's protocol itself (dynamodb-wire.ts) and
   * loads the SDK's credential chain only when no credentials are in the environment.
   */
  awsSdk: '/node_modules/@aws-sdk/',
  smithy: '/node_modules/@smithy/',
  /** Never: the Redis store speaks Redis's protocol itself (redis-wire.ts); ioredis is the tests' independent client. */
  redis: '/node_modules/ioredis/',
  otlpTraces: '/node_modules/@opentelemetry/exporter-trace-otlp-http/',
  otlpMetrics: '/node_modules/@opentelemetry/exporter-metrics-otlp-http/',
  prometheus: '/node_modules/@opentelemetry/exporter-prometheus/',
  /** The WebSocket server: on the first upgrade to a v1/v2 agent's `/stream`. */
  ws: '/node_modules/ws/',
  /** The tracing SDK: only when spans are exported (OTLP); otherwise spans carry their ids only. */
  tracingSdk: '/node_modules/@opentelemetry/sdk-trace/',
  /** The semantic conventions (~400 KB): by the SDK's resource and exporters only (src/telemetry/w3c-trace-context.ts). */
  semanticConventions: '/node_modules/@opentelemetry/semantic-conventions/',
  /** The metrics SDK: only when something reads the metrics (OTLP or Prometheus). */
  metricsSdk: '/node_modules/@opentelemetry/sdk-metrics/',
  mcp: '/node_modules/@modelcontextprotocol/sdk/',
  ajv: '/node_modules/ajv/',
  zod: '/node_modules/zod/',
  agUiEncoder: '/node_modules/@ag-ui/encoder/',
  passport: '/node_modules/passport/',
  jose: '/node_modules/jose/',
  /** The SDK's root (its client, ~230 modules). */
  openAi: '/node_modules/openai/index.js',
  /**
   * Never, whatever the configuration: class-validator's index (every decorator, with validator.js
   * whole and libphonenumber-js, ~290 modules more); the app loads the parts it uses
   * (src/common/validation/class-validator-parts.ts).
   */
  classValidatorIndex: '/node_modules/class-validator/cjs/index.js',
  /** Never either: Nest's multer integration (no uploads here; src/app.factory.ts passes the adapter). */
  multer: '/node_modules/multer/',
  libphonenumber: '/node_modules/libphonenumber-js/',
};
type Optional = keyof typeof OPTIONAL;

interface Probe {
  loaded: Set<Optional>;
  /** Node's own modules the process has loaded (process.moduleLoadList), by id. */
  builtins: string[];
  newSpaceBytes: number;
  /** Intl.DateTimeFormat formatters really built (each reads ICU's locale data into memory). */
  dateTimeFormats: number;
  /** The ES modules the process loaded, by URL (NestJS and the few ES packages). */
  esModules: string[];
  /** The files of its CommonJS module cache. */
  modules: string[];
}

const runs: CliRun[] = [];
const dirs: string[] = [];

/** Boots the installed command with `env`, reads the probe once it listens (and `use` has run), and stops it. */
async function bootAndProbe(configPath: string, env: Record<string, string>, nodeOptions = '', use?: (port: number) => Promise<void>): Promise<Probe> {
  const dir = mkdtempSync(join(tmpdir(), 'ta-boot-footprint-'));
  dirs.push(dir);
  const file = join(dir, 'probe.json');
  const run = runCli(['serve', configPath, '--port', '0'], {
    TA_AUTH_MODE: 'dev',
    TA_LOG_LEVEL: 'info',
    ...MODEL_ENV,
    ...env,
    NODE_OPTIONS: `--require ${JSON.stringify(PROBE)} ${nodeOptions}`,
    MODULE_PROBE_FILE: file,
  });
  runs.push(run);
  const port = await run.listening();
  await use?.(port);
  run.child.kill('SIGUSR2');
  const { modules, builtins, newSpaceBytes, dateTimeFormats, esModules } = await readProbeFile<Omit<Probe, 'loaded'>>(file);
  await run.stop();
  const loaded = new Set((Object.keys(OPTIONAL) as Optional[]).filter((k) => modules.some((m) => m.includes(OPTIONAL[k]))));
  return { loaded, builtins, newSpaceBytes, dateTimeFormats, esModules, modules };
}

function agentsDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'ta-boot-agents-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const MCP_AGENT = `apiVersion: tealagents/v1alpha1
kind: Chat
name: McpAgent
version: 0.1
spec:
  agent:
    name: default
    model: local/echo
    system_prompt: You use tools.
    mcp_servers:
      - name: todo
        transport: http
        url: http://127.0.0.1:9/mcp
`;

jest.setTimeout(120_000);
beforeAll(ensureBuilt, 150_000);
afterAll(async () => {
  await Promise.all(runs.map((r) => r.stop()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('boot footprint: optional packages load only when configured', () => {
  it('a dev-auth, in-memory server without tools loads none of them, and its young generation was not grown by the boot', async () => {
    const probe = await bootAndProbe(BENCH_AGENTS, { TA_STATE_STORE: 'memory' });
    expect([...probe.loaded]).toEqual([]);
    // V8 grows it to 32-64 MiB while 1,500 modules load unless held (src/boot-heap.ts).
    expect(probe.newSpaceBytes).toBeLessThanOrEqual(8 * 1024 * 1024);
  });

  it("Node's bundled undici is not loaded, though NestJS imports http (src/boot-http-facade.ts)", async () => {
    const probe = await bootAndProbe(BENCH_AGENTS, { TA_STATE_STORE: 'memory' });
    expect(probe.builtins).toContain('http'); // the facade was built
    expect(probe.builtins).not.toContain('internal/deps/undici/undici');
  });

  it("no date formatter is built, though NestJS makes one as it loads (src/boot-intl.ts): ICU's locale data stays out of memory", async () => {
    const probe = await bootAndProbe(BENCH_AGENTS, { TA_STATE_STORE: 'memory' }, '', async (port) => {
      expect((await fetch(`http://127.0.0.1:${port}/health/live`)).status).toBe(200);
    });
    expect(probe.dateTimeFormats).toBe(0);
  });

  it("an operator's own young-generation sizing (NODE_OPTIONS) is left alone: the boot grows it as V8 would", async () => {
    const probe = await bootAndProbe(BENCH_AGENTS, { TA_STATE_STORE: 'memory' }, '--max-semi-space-size=16');
    expect(probe.newSpaceBytes).toBeGreaterThan(8 * 1024 * 1024);
  });

  it('OTLP, Prometheus, an MCP server and Entra ID load their packages; Redis none (not ioredis, not the DynamoDB SDK)', async () => {
    const probe = await bootAndProbe(agentsDir({ 'bench.yaml': readFileSync(join(BENCH_AGENTS, 'bench.yaml'), 'utf8'), 'mcp.yaml': MCP_AGENT }), {
      TA_STATE_STORE: 'redis',
      TA_REDIS_URL: testRedisUrl(),
      TA_OTEL_ENDPOINT: 'http://127.0.0.1:9',
      TA_METRICS_PROMETHEUS: 'true',
      TA_AUTH_MODE: 'entra',
      TA_ENTRA_AUTHORITY: 'http://127.0.0.1:9',
      TA_ENTRA_ALLOWED_TENANTS: '72f988bf-86f1-41af-91ab-2d7cd011db47',
      TA_ENTRA_AUDIENCE: 'api://teal-agent-server',
      TA_ENTRA_REQUIRED_SCOPES: 'agents.invoke',
    });
    expect([...probe.loaded].sort()).toEqual([
      'ajv',
      'jose',
      'mcp',
      'metricsSdk',
      'otlpMetrics',
      'otlpTraces',
      'passport',
      'prometheus',
      'semanticConventions',
      'tracingSdk',
      'zod',
    ]);
  });

  it('DynamoDB with credentials in the environment loads no AWS SDK (and not ioredis): its table made at boot through the wire', async () => {
    const probe = await bootAndProbe(BENCH_AGENTS, {
      TA_STATE_STORE: 'dynamodb',
      TA_DYNAMODB_ENDPOINT: testDynamoDbEndpoint(),
      TA_DYNAMODB_TABLE: uniqueName('boot-footprint'),
      TA_DYNAMODB_CREATE_TABLE: 'true',
      AWS_REGION: DYNAMODB_LOCAL.region,
      AWS_ACCESS_KEY_ID: DYNAMODB_LOCAL.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: DYNAMODB_LOCAL.credentials.secretAccessKey,
    });
    expect([...probe.loaded]).toEqual([]);
  });
});

describe('the OpenAI SDK is never loaded by a model call', () => {
  let fake: FakeOpenAi;
  beforeAll(async () => {
    fake = await startFakeOpenAi();
  });
  afterAll(() => fake.close());

  const turn = async (port: number, path: '' | '/sse') => {
    fake.script(reply.text('hello'));
    const res = await fetch(`http://127.0.0.1:${port}/Bench/1${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ items: [{ content_type: 'text', content: 'hi' }] }),
    });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).toContain('hello');
  };

  it('a completion and a stream are both posted without it (our own client and SSE reader)', async () => {
    const env = { TA_STATE_STORE: 'memory', TA_BASE_URL: fake.baseURL, TA_API_KEY: 'sk-test' };
    const completed = await bootAndProbe(BENCH_AGENTS, env, '', (port) => turn(port, ''));
    expect(completed.loaded.has('openAi')).toBe(false);
    const streamed = await bootAndProbe(BENCH_AGENTS, env, '', (port) => turn(port, '/sse'));
    expect(streamed.loaded.has('openAi')).toBe(false);
    expect(fake.requests.map((r) => r.body.stream)).toEqual([false, true]);
  });
});

describe('NestJS and a few packages load from their bundle (scripts/bundle-vendor.mjs, src/boot-vendor-bundle.ts)', () => {
  const VENDOR = join(ROOT, 'dist', 'vendor');
  /** The packages the bundle holds: none of their files may load from node_modules besides it (two copies in one process). */
  const BUNDLED =
    /\/node_modules\/(@nestjs\/(common|core|platform-express)|rxjs|yaml|class-transformer|@opentelemetry\/api|pg|pg-protocol|pg-types|pg-pool|pgpass|pg-connection-string)\//;
  /** Bundled CommonJS packages, imported by their name only (PostgreSQL's client: `pg` and the packages of its own it requires). */
  const COMMONJS = ['yaml', 'class-transformer', '@opentelemetry/api', 'pg'];
  const PG = ['pg', 'pg-protocol', 'pg-types', 'pg-pool', 'pgpass', 'pg-connection-string'];

  /** The specifiers matching `pattern` (its first group) in the JavaScript files under `dir` (dist/vendor aside). */
  const specifiersIn = (dir: string, pattern: RegExp): string[] =>
    readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && /\.m?js$/.test(e.name) && !join(e.parentPath, e.name).startsWith(VENDOR))
      .flatMap((e) => [...readFileSync(join(e.parentPath, e.name), 'utf8').matchAll(pattern)].map((m) => m[1]!));

  it('the build bundled every specifier of those packages that the server and @nestjs/passport require', () => {
    const manifest = JSON.parse(readFileSync(join(VENDOR, 'manifest.json'), 'utf8')) as Record<string, string>;
    const ours = new Set(specifiersIn(join(ROOT, 'dist'), /require\("((?:@nestjs\/|yaml|class-transformer|@opentelemetry\/api|pg\b)[^"]*)"\)/g));
    // pg's own packages, as pg requires them (by name: each is bundled on its own).
    const pgRequires = new Set([...readFileSync(join(VENDOR, 'pg.cjs'), 'utf8').matchAll(/require\("(pg[^"/]*)"\)/g)].map((m) => m[1]!));
    expect([...pgRequires].filter((s) => s !== 'pg-native' && s !== 'pg-cloudflare' && !(s in manifest))).toEqual([]);
    for (const name of PG) expect(manifest[name]).toBe(`${name}.cjs`);
    // @nestjs/passport stays a package of its own (loaded with Entra auth), importing the bundled Nest.
    ours.delete('@nestjs/passport');
    const passport = new Set(specifiersIn(join(ROOT, 'node_modules', '@nestjs', 'passport', 'dist'), /from '(@nestjs\/[^']+)'/g));
    expect([...ours, ...passport].filter((s) => !(s in manifest))).toEqual([]);
    for (const name of ['@nestjs/core', ...COMMONJS]) expect(ours.has(name)).toBe(true); // the scan found what it looks for
    for (const file of Object.values(manifest)) expect(existsSync(join(VENDOR, file))).toBe(true);
  });

  it('a server loads them from the bundle only, one copy of each in the process, and serves', async () => {
    let status = 0;
    const probe = await bootAndProbe(BENCH_AGENTS, { TA_STATE_STORE: 'memory' }, '', async (port) => {
      status = (await fetch(`http://127.0.0.1:${port}/Bench/1/health/live`)).status;
    });
    expect(status).toBe(200);
    expect([...probe.esModules, ...probe.modules].filter((file) => BUNDLED.test(file))).toEqual([]);
    expect(probe.esModules).toContainEqual(expect.stringContaining('/dist/vendor/core.mjs'));
    for (const file of ['yaml.cjs', 'class-transformer.cjs', 'opentelemetry-api.cjs']) expect(probe.modules).toContain(join(VENDOR, file));
  });

  it("a PostgreSQL server loads PostgreSQL's client from the bundle only, and reads its store through it", async () => {
    let statuses: number[] = [];
    const probe = await bootAndProbe(
      BENCH_AGENTS,
      { TA_STATE_STORE: 'postgres', TA_POSTGRES_URL: testPostgresUrl(), TA_POSTGRES_SCHEMA: uniqueSchema('ta_footprint') },
      '',
      async (port) => {
        // Readiness queries the store; the caller's sessions are a read of its tables.
        statuses = await Promise.all(
          [`http://127.0.0.1:${port}/health/ready`, `http://127.0.0.1:${port}/Bench/1/sessions`].map(async (u) => (await fetch(u)).status),
        );
      },
    );
    expect(statuses).toEqual([200, 200]);
    expect([...probe.esModules, ...probe.modules].filter((file) => BUNDLED.test(file))).toEqual([]);
    // pgpass loads only for a connection that needs a password (none here).
    for (const name of PG.filter((n) => n !== 'pgpass')) expect(probe.modules).toContain(join(VENDOR, `${name}.cjs`));
  });

  it('with Entra auth and OTLP too (@nestjs/passport and the OpenTelemetry SDK import the bundled Nest and API)', async () => {
    const probe = await bootAndProbe(BENCH_AGENTS, {
      TA_STATE_STORE: 'memory',
      TA_AUTH_MODE: 'entra',
      TA_ENTRA_AUTHORITY: 'http://127.0.0.1:9',
      TA_ENTRA_ALLOWED_TENANTS: '72f988bf-86f1-41af-91ab-2d7cd011db47',
      TA_ENTRA_AUDIENCE: 'api://teal-agent-server',
      TA_ENTRA_REQUIRED_SCOPES: 'agents.invoke',
      TA_OTEL_ENDPOINT: 'http://127.0.0.1:9',
    });
    expect(probe.esModules).toContainEqual(expect.stringContaining('/node_modules/@nestjs/passport/'));
    expect(probe.modules).toContainEqual(expect.stringContaining('/node_modules/@opentelemetry/sdk-trace'));
    expect([...probe.esModules, ...probe.modules].filter((file) => BUNDLED.test(file))).toEqual([]);
  });
});

describe('the server in one file (scripts/bundle-vendor.mjs, src/package-root.ts)', () => {
  it("a built server runs its own modules from dist/cli.js alone, and finds the package's files from there", async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    let index: { version?: string } = {};
    // The demo agents: it listens only if their plugins (Calculator, Notes...) are found in
    // demos/plugins, from the package root.
    const probe = await bootAndProbe(join(ROOT, 'demos', 'agents'), { TA_STATE_STORE: 'memory' }, '', async (port) => {
      index = (await (await fetch(`http://127.0.0.1:${port}/`, { headers: { accept: 'application/json' } })).json()) as typeof index;
    });
    const ownFiles = probe.modules.filter((file) => file.startsWith(join(ROOT, 'dist')) && !file.startsWith(join(ROOT, 'dist', 'vendor')));
    expect(ownFiles).toEqual([join(ROOT, 'dist', 'cli.js')]);
    expect(index.version).toBe(version); // package.json, read from the package root
    // ASCII only, so V8 holds its source at one byte a character.
    expect(/[\u0080-\uffff]/.test(readFileSync(join(ROOT, 'dist', 'cli.js'), 'latin1'))).toBe(false);
  });
});
