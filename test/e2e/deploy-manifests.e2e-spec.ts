import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { parse, parseAllDocuments } from 'yaml';
import { loadAgentConfigs } from '../../src/agents/config/load-agent-configs';
import { EnvVars } from '../../src/config/env.schema';
import { SCHEMA_VERSION } from '../../src/state/backends/postgres/migrations/migration-list';
import { request } from '../support/http';
import { ensureBuilt, runCli } from '../support/built-cli';
import { testPostgresUrl, uniqueSchema } from '../support/services';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';

/**
 * The deployment files (docs/deploy.md) against what they describe: each Kubernetes manifest
 * validated with the upstream Kubernetes JSON schemas (kubernetes-models), the probes against the
 * routes a real server serves, the ConfigMap's agents through the server's own config loader, and
 * every environment variable named in the Deployment, Secret, compose.yaml and Dockerfile against
 * the ones the server reads. No cluster or container engine is needed.
 */
const ROOT = resolve(__dirname, '../..');
const K8S = join(ROOT, 'deploy', 'k8s');

type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  spec?: any;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
};
type ModelClass = new (data: unknown) => { validate(): void };

function manifests(): { file: string; doc: Manifest }[] {
  return readdirSync(K8S)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()
    .flatMap((file) =>
      parseAllDocuments(readFileSync(join(K8S, file), 'utf8'))
        .map((d) => {
          if (d.errors.length) throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`);
          return d.toJS() as Manifest | null;
        })
        .filter((doc): doc is Manifest => doc !== null)
        .map((doc) => ({ file, doc })),
    );
}

/**
 * The kubernetes-models class for an apiVersion/kind (`apps/v1` Deployment →
 * `kubernetes-models/apps/v1/Deployment`; the core group is `v1`). The package is ESM-only, hence
 * import(). A kind it does not know fails here.
 */
async function modelClass(apiVersion: string, kind: string): Promise<ModelClass> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(`kubernetes-models/${apiVersion}/${kind}`)) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`no Kubernetes schema for apiVersion ${apiVersion}, kind ${kind}: ${(e as Error).message}`, { cause: e });
  }
  const cls = mod[kind];
  if (typeof cls !== 'function') throw new Error(`kubernetes-models/${apiVersion}/${kind} exports no ${kind}`);
  return cls as ModelClass;
}

/** Every variable the server reads (src/config/env.schema.ts: each field is one variable). */
const SERVER_ENV = new Set(Object.keys(new EnvVars()));
/** Read by the AWS SDK itself, not by the server's schema. */
const AWS_SDK_ENV = new Set(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE']);

const all = manifests();
const one = (kind: string): Manifest => {
  const found = all.filter((m) => m.doc.kind === kind);
  expect(found).toHaveLength(1);
  return found[0]!.doc;
};

describe('deploy/k8s manifests', () => {
  it('hold exactly the expected objects', () => {
    expect(all.map((m) => m.doc.kind).sort()).toEqual(
      ['ConfigMap', 'Deployment', 'HorizontalPodAutoscaler', 'Job', 'PodDisruptionBudget', 'Secret', 'Service'].sort(),
    );
  });

  it.each(all.map((m) => [`${m.file}: ${m.doc.kind} ${m.doc.metadata?.name}`, m.doc] as const))(
    '%s is valid against the Kubernetes schema',
    async (_name, doc) => {
      const Model = await modelClass(doc.apiVersion, doc.kind);
      expect(() => new Model(doc).validate()).not.toThrow();
    },
  );

  // The check above must be able to fail: a wrong type and an unknown kind are reported.
  it('reports an invalid field and an unknown kind (the schema check is live)', async () => {
    const deployment = structuredClone(one('Deployment'));
    deployment.spec.template.spec.containers[0].ports[0].containerPort = 'eight thousand';
    const Model = await modelClass(deployment.apiVersion, deployment.kind);
    expect(() => new Model(deployment).validate()).toThrow(/containerPort must be integer/);
    await expect(modelClass('apps/v1', 'Deploymnet')).rejects.toThrow(/no Kubernetes schema for apiVersion apps\/v1, kind Deploymnet/);
  });

  it('wire together: selectors, ports, the ConfigMap, the Secret and the scale target', () => {
    const deployment = one('Deployment');
    const labels = deployment.spec.template.metadata.labels;
    expect(labels).toMatchObject(deployment.spec.selector.matchLabels);
    expect(labels).toMatchObject(one('Service').spec.selector);
    expect(labels).toMatchObject(one('PodDisruptionBudget').spec.selector.matchLabels);
    const container = deployment.spec.template.spec.containers[0];
    const portNames = container.ports.map((p: { name: string }) => p.name);
    for (const p of one('Service').spec.ports) expect(portNames).toContain(p.targetPort);
    const volumes = deployment.spec.template.spec.volumes;
    expect(volumes.find((v: { configMap?: { name: string } }) => v.configMap)?.configMap.name).toBe(one('ConfigMap').metadata.name);
    expect(container.envFrom[0].secretRef.name).toBe(one('Secret').metadata.name);
    expect(one('HorizontalPodAutoscaler').spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata.name });
    // More than one replica shares tasks only through a shared store (docs/deploy.md, Scaling).
    const store = container.env.find((e: { name: string }) => e.name === 'TA_STATE_STORE')?.value;
    expect(['redis', 'dynamodb', 'postgres']).toContain(store);
    expect(container.lifecycle.preStop.exec.command).toEqual(['sleep', expect.stringMatching(/^\d+$/)]);
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(Number(container.lifecycle.preStop.exec.command[1]));
  });

  it('name only environment variables the server reads (Deployment and Job env, Secret keys)', () => {
    const container = one('Deployment').spec.template.spec.containers[0];
    const job = one('Job').spec.template.spec.containers[0];
    const names = [...[...container.env, ...(job.env ?? [])].map((e: { name: string }) => e.name), ...Object.keys(one('Secret').stringData ?? {})];
    expect(names.filter((n) => !SERVER_ENV.has(n))).toEqual([]);
    expect(SERVER_ENV.has('TA_API_KEY')).toBe(true); // the schema really lists its fields
  });

  describe('PostgreSQL: the migrate Job, the CA bundle and the Secret (docs/deploy.md, PostgreSQL)', () => {
    const deployment = one('Deployment');
    const server = deployment.spec.template.spec.containers[0];
    const job = one('Job');
    const pod = job.spec.template.spec;
    const migrate = pod.containers[0];
    type Mount = { name: string; mountPath: string; readOnly?: boolean };
    type Volume = { name: string; secret?: { secretName: string; optional?: boolean } };
    const caOf = (mounts: Mount[], volumes: Volume[]) => {
      const volume = volumes.find((v) => v.secret);
      const mount = mounts.find((m) => m.name === volume?.name);
      return { secret: volume?.secret, path: mount?.mountPath, readOnly: mount?.readOnly };
    };

    it("runs the Deployment's image as teal-agent-server migrate, with its Secret, once, as the same non-root user", () => {
      expect(migrate.image).toBe(server.image);
      expect(migrate.args).toEqual(['migrate']);
      expect(migrate.envFrom).toEqual(server.envFrom);
      expect(pod.restartPolicy).toBe('Never');
      expect(job.spec.backoffLimit).toBeGreaterThanOrEqual(1);
      expect(job.spec.activeDeadlineSeconds).toBeGreaterThan(0);
      expect(pod.securityContext).toEqual(deployment.spec.template.spec.securityContext);
      expect(migrate.securityContext).toEqual(server.securityContext);
    });

    it("no Service, PodDisruptionBudget or Deployment selects the Job's pod", () => {
      const labels: Record<string, string> = job.spec.template.metadata.labels;
      const selects = (selector: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);
      expect(selects(one('Service').spec.selector)).toBe(false);
      expect(selects(one('PodDisruptionBudget').spec.selector.matchLabels)).toBe(false);
      expect(selects(deployment.spec.selector.matchLabels)).toBe(false);
    });

    it("mounts the same CA bundle as the servers, where the Secret's TA_POSTGRES_URL reads it with sslmode=verify-full", () => {
      const ca = caOf(server.volumeMounts, deployment.spec.template.spec.volumes);
      expect(ca).toEqual({ secret: { secretName: 'teal-agent-server-postgres-ca', optional: true }, path: '/etc/ssl/postgres', readOnly: true });
      expect(caOf(migrate.volumeMounts, pod.volumes)).toEqual(ca);
      const url = new URL(one('Secret').stringData!.TA_POSTGRES_URL!);
      expect(url.protocol).toBe('postgres:');
      expect(url.searchParams.get('sslmode')).toBe('verify-full');
      expect(url.searchParams.get('sslrootcert')).toMatch(new RegExp(`^${ca.path}/[^/]+$`));
    });

    it("its command migrates: the Job's args run by the built CLI against a real PostgreSQL, with the Job's environment", async () => {
      ensureBuilt();
      const schema = uniqueSchema('k8s_job');
      const env = Object.fromEntries((migrate.env ?? []).map((e: { name: string; value: string }) => [e.name, e.value]));
      const run = runCli(migrate.args, { ...env, TA_POSTGRES_URL: testPostgresUrl(), TA_POSTGRES_SCHEMA: schema });
      const admin = new Client({ connectionString: testPostgresUrl() });
      try {
        expect({ ...(await run.exited), stderr: run.stderr() }).toEqual({ code: 0, signal: null, stderr: '' });
        expect(run.stdout()).toBe(`PostgreSQL schema ${schema}: migrated from version 0 to ${SCHEMA_VERSION}\n`);
      } finally {
        await admin.connect();
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await admin.end();
      }
    }, 30_000);
  });

  it("the ConfigMap's agents load with the server's own config loader", () => {
    const dir = writeAgentDir(one('ConfigMap').data!);
    const agents = loadAgentConfigs(dir);
    expect(agents.map((a) => `${a.name}/${a.version}`).sort()).toEqual(['Assistant/0.1', 'EchoAgent/0.1']);
  });

  describe('the probes, against a server running the ConfigMap agents', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ agents: one('ConfigMap').data! });
    });
    afterAll(() => t?.close());

    it('every httpGet probe path answers 200', async () => {
      const container = one('Deployment').spec.template.spec.containers[0];
      const probes = [container.startupProbe, container.livenessProbe, container.readinessProbe];
      expect(probes.every(Boolean)).toBe(true);
      for (const probe of probes) {
        expect(container.ports.map((p: { name: string }) => p.name)).toContain(probe.httpGet.port);
        const res = await request(`${t.url}${probe.httpGet.path}`);
        expect({ path: probe.httpGet.path, status: res.status }).toEqual({ path: probe.httpGet.path, status: 200 });
      }
    });
  });
});

describe('compose.yaml', () => {
  type Service = {
    image?: string;
    environment?: Record<string, string>;
    build?: unknown;
    healthcheck?: { test: string[] };
    volumes?: string[];
    depends_on?: Record<string, { condition: string }>;
  };
  const compose = parse(readFileSync(join(ROOT, 'compose.yaml'), 'utf8')) as { services: Record<string, Service>; volumes: Record<string, unknown> };
  const server = compose.services.server!;

  it('has the server (built from this Dockerfile), Redis, DynamoDB Local and PostgreSQL', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['dynamodb', 'postgres', 'redis', 'server']);
    expect(server.build).toBe('.');
    // The store is chosen when starting the stack (docs/deploy.md, Compose): Redis unless TA_STATE_STORE says otherwise.
    expect(server.environment!.TA_STATE_STORE).toBe('${TA_STATE_STORE:-redis}');
  });

  it('runs PostgreSQL from the official image, checked with pg_isready over TCP, its data in a named volume, and the server waits for it to be healthy', () => {
    const pg = compose.services.postgres!;
    expect(pg.image).toMatch(/^postgres:\d+(-alpine)?$/);
    const { POSTGRES_USER: user, POSTGRES_PASSWORD: password, POSTGRES_DB: db } = pg.environment ?? {};
    expect([user, password, db].every(Boolean)).toBe(true);
    expect(pg.healthcheck?.test).toEqual(['CMD', 'pg_isready', '-h', '127.0.0.1', '-U', user, '-d', db]);
    const [volume, path] = pg.volumes![0]!.split(':');
    expect(Object.keys(compose.volumes)).toContain(volume);
    expect(path).toBe('/var/lib/postgresql/data'); // where the image keeps its data up to PostgreSQL 17 (18 moved it)
    expect(server.depends_on?.postgres).toEqual({ condition: 'service_healthy' });
    // The server's connection string names that service, user, password and database.
    const url = new URL(server.environment!.TA_POSTGRES_URL!);
    expect([url.protocol, url.hostname, url.port, url.username, url.password, url.pathname]).toEqual([
      'postgres:',
      'postgres',
      '5432',
      user,
      password,
      `/${db}`,
    ]);
  });

  describe('with TA_STATE_STORE=postgres: the server environment, on a PostgreSQL set up as the postgres service is', () => {
    let admin: Client;
    let t: TestApp;
    const pg = compose.services.postgres!.environment!;

    beforeAll(async () => {
      admin = new Client({ connectionString: testPostgresUrl() });
      await admin.connect();
      // The run's server trusts local logins; the role owns the database, as POSTGRES_USER does in the image.
      await admin.query(`CREATE ROLE ${pg.POSTGRES_USER} LOGIN PASSWORD ${admin.escapeLiteral(pg.POSTGRES_PASSWORD!)}`);
      await admin.query(`CREATE DATABASE ${pg.POSTGRES_DB} OWNER ${pg.POSTGRES_USER}`);
      const url = new URL(server.environment!.TA_POSTGRES_URL!);
      url.host = new URL(testPostgresUrl()).host; // the service's host name is the test server's address
      t = await startTestApp({
        configPath: join(ROOT, 'demos', 'agents'), // what compose mounts at /agents
        env: { ...server.environment!, TA_STATE_STORE: 'postgres', TA_POSTGRES_URL: url.href },
      });
    });
    afterAll(async () => {
      await t?.close();
      await admin.query(`DROP DATABASE IF EXISTS ${pg.POSTGRES_DB} WITH (FORCE)`).catch(() => undefined);
      await admin.query(`DROP ROLE IF EXISTS ${pg.POSTGRES_USER}`).catch(() => undefined);
      await admin.end();
    });

    it('boots, migrates its schema into that database, and is ready', async () => {
      const ready = await request(`${t.url}/health/ready`);
      expect([ready.status, ready.body.dependencies]).toEqual([200, expect.arrayContaining([{ name: 'state_store', state: 'up' }])]);
      expect(t.env.state.store).toBe('postgres');
      const db = new Client({ connectionString: t.env.state.postgres!.url });
      await db.connect();
      try {
        const { rows } = await db.query(`SELECT current_user AS "user", count(*)::int AS versions FROM teal_agent.schema_version`);
        expect(rows).toEqual([{ user: pg.POSTGRES_USER, versions: expect.any(Number) }]);
        expect(rows[0].versions).toBeGreaterThanOrEqual(1);
      } finally {
        await db.end();
      }
    });
  });

  it('names only environment variables the server (or the AWS SDK) reads', () => {
    const names = Object.keys(compose.services.server!.environment ?? {});
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((n) => !SERVER_ENV.has(n) && !AWS_SDK_ENV.has(n))).toEqual([]);
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');

  it('sets only environment variables the server reads, and probes /health/live', () => {
    const env = dockerfile
      .split('\n')
      .filter((l) => l.startsWith('ENV '))
      .flatMap((l) => [...l.matchAll(/([A-Z][A-Z0-9_]*)=/g)].map((m) => m[1]!));
    expect(env).toEqual(expect.arrayContaining(['NODE_ENV', 'TA_HOST', 'TA_PORT', 'TA_SERVICE_CONFIG']));
    expect(env.filter((n) => !SERVER_ENV.has(n))).toEqual([]);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\/health\/live/m);
  });

  it('builds on the Node version the project pins (.nvmrc)', () => {
    const nvmrc = readFileSync(join(ROOT, '.nvmrc'), 'utf8').trim();
    expect(dockerfile).toMatch(new RegExp(`^ARG NODE_VERSION=${nvmrc.replace(/\./g, '\\.')}$`, 'm'));
  });
});
