import { join } from 'node:path';
import { EntraBenchAuth, startEntraAuth } from '../../bench/entra-auth';
import { Measured } from '../../bench/measure';
import { Proc, spawnWithPort } from '../../bench/processes';
import { formatReport } from '../../bench/report';
import { Cells, Round } from '../../bench/rounds';
import { startOurs, Subject } from '../../bench/subjects';
import { ensureBuilt } from '../support/built-cli';

// The benchmark's Entra variant (issue 14: every figure within 10 % with Entra auth, cached keys):
// the subject it measures really authenticates each turn, with the keys fetched once, and the
// report compares it with dev auth as issue 14 asks. Nothing here is timed.

describe('the Entra subject (our built server, TA_AUTH_MODE=entra, local OpenID issuer)', () => {
  let model: Proc & { port: number };
  let auth: EntraBenchAuth;
  let ours: Subject;

  beforeAll(async () => {
    ensureBuilt();
    // The bench's own instant model, run from its source (Node 24 strips the types).
    model = await spawnWithPort(join(__dirname, '../../bench/fast-model.server.ts'), { NODE_OPTIONS: '--disable-warning=MODULE_TYPELESS_PACKAGE_JSON' });
    auth = await startEntraAuth();
    ours = await startOurs({ name: 'memory', env: { TA_STATE_STORE: 'memory' } }, `http://127.0.0.1:${model.port}`, { auth });
  }, 150_000);
  afterAll(async () => {
    await ours?.proc.stop();
    await auth?.stop();
    await model?.stop();
  });

  it('answers its turns with a token (any of the minted ones continues the conversation), fetching metadata and keys once', async () => {
    let taskId = await ours.turn(undefined);
    for (let i = 0; i < 5; i++) expect((taskId = await ours.turn(taskId))).toBe(taskId);
    expect(auth.idpRequests()).toEqual({ metadata: 1, jwks: 1 });
  });

  it('refuses the same turn without a token (401), so the token check is on the measured path', async () => {
    const res = await fetch(ours.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ items: [{ content_type: 'text', content: 'hello' }] }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
  });
});

describe('formatReport with the Entra variant', () => {
  const cells = (cpu: number, throughput: number, p50: number): Cells => {
    const m: Measured = { requests: 100, seconds: 1, throughput, p50, p95: p50, p99: p50, cpuMsPerTurn: cpu };
    return { c1: m, c16: m, history: m };
  };

  it('adds a table of Entra ÷ dev ratios per round with their median against the 10 % limit', () => {
    const rounds: Round[] = [
      { baseline: cells(0.5, 1000, 1), ours: cells(1, 400, 2), entra: cells(1.05, 390, 2.1) },
      { baseline: cells(0.5, 1000, 1), ours: cells(1, 400, 2), entra: cells(1.3, 300, 2.6) },
      { baseline: cells(0.5, 1000, 1), ours: cells(1, 400, 2), entra: cells(1.2, 340, 2.4) },
    ];
    const report = formatReport(
      { c1Requests: 100, c16Requests: 100, historyTurns: 10, historySamples: 5, rounds: 3 },
      { rssAtStart: 50, rssIdle: 60 },
      [{ store: 'memory', spawnToReadyMs: 500, rssAtStart: 90, rssIdle: 95, rounds, entraIdp: { metadata: 1, jwks: 1 } }],
      0,
    );
    const table = report.slice(report.indexOf('| target (ours with Entra auth ÷ ours with dev auth'));
    expect(table).toContain('| CPU per turn at c=16 | 1.05× | 1.30× | 1.20× | **1.20×** | ≤ 1.1× | NOT met |');
    expect(table).toContain('| throughput at c=16 | 0.97× | 0.75× | 0.85× | **0.85×** | ≥ 0.9× | NOT met |');
    expect(report).toContain('| median | ours, Entra auth | 340 | 2.40 |');
    expect(report).toContain('metadata 1, keys 1');
  });

  it('leaves the table out when the variant was not measured (BENCH_ENTRA=0)', () => {
    const report = formatReport(
      { c1Requests: 100, c16Requests: 100, historyTurns: 10, historySamples: 5, rounds: 1 },
      { rssAtStart: 50, rssIdle: 60 },
      [{ store: 'memory', spawnToReadyMs: 500, rssAtStart: 90, rssIdle: 95, rounds: [{ baseline: cells(0.5, 1000, 1), ours: cells(1, 400, 2) }] }],
      0,
    );
    expect(report).not.toContain('Entra');
  });
});
