import { inspect } from 'node:util';
import { configProblems, loadConfigFiles } from './config.fixtures';
import { WEBHOOK_EVENTS, webhookSecretProblem } from './webhooks.schema';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const VAR = 'TA_TEST_WEBHOOK_SECRET';

const agent = (webhooks: string) =>
  ['apiVersion: tealagents/v1alpha1', 'name: Bot', 'version: 0.1', 'spec:', '  agent:', '    name: default', '    model: local/echo', webhooks].join('\n') +
  '\n';

const load = (webhooks: string) => loadConfigFiles({ 'a.yaml': agent(webhooks) })[0]!;
const problems = (webhooks: string) => configProblems({ 'a.yaml': agent(webhooks) });

describe('spec.webhooks', () => {
  beforeEach(() => {
    process.env[VAR] = SECRET;
  });
  afterEach(() => {
    delete process.env[VAR];
  });

  it('is empty by default', () => {
    expect(load('').webhooks).toEqual([]);
  });

  it('reads url, events (default: all), the secret from secret_env, and allow_request_urls', () => {
    const a = load(
      [
        '  webhooks:',
        '    - url: https://hooks.example.com/teal',
        `      secret_env: ${VAR}`,
        '    - events: [approval.required, approval.required, request.failed]',
        `      secret_env: ${VAR}`,
        '      allow_request_urls: [https://bots.example.com/hooks/]',
      ].join('\n'),
    );
    expect(a.webhooks).toMatchObject([
      { url: 'https://hooks.example.com/teal', events: [...WEBHOOK_EVENTS], allowRequestUrls: [] },
      { url: undefined, events: ['approval.required', 'request.failed'], allowRequestUrls: ['https://bots.example.com/hooks/'] },
    ]);
    expect(a.webhooks[0]!.secret.env).toBe(VAR);
    expect(a.webhooks[0]!.secret.reveal()).toBe(SECRET);
  });

  it('never shows the secret in a dump of the agent', () => {
    const a = load(`  webhooks: [{url: "https://hooks.example.com/", secret_env: ${VAR}}]`);
    expect(JSON.stringify(a.webhooks)).not.toContain(SECRET.slice(6));
    expect(inspect(a, { depth: 10 })).not.toContain(SECRET.slice(6));
  });

  it('stops the boot, naming the field, when the secret variable is not set, without a value to show', () => {
    delete process.env[VAR];
    expect(problems(`  webhooks:\n    - url: https://hooks.example.com/\n      secret_env: ${VAR}`)).toEqual([
      `a.yaml:10: spec.webhooks.0.secret_env: the environment variable ${VAR} is not set (it must hold the signing secret: whsec_ and base64)`,
    ]);
  });

  it('refuses a secret that is not whsec_ and base64 of 24 to 64 bytes, and never prints it', () => {
    for (const bad of ['not a secret at all!', 'whsec_c2hvcnQ=', `whsec_${Buffer.alloc(65).toString('base64')}`, 'whsec_%%%%']) {
      const message = webhookSecretProblem(VAR, { [VAR]: bad });
      expect(message).toMatch(/does not hold a Standard Webhooks secret: whsec_ and the base64 of 24 to 64 random bytes \(its value is not shown\)$/);
      expect(message).not.toContain(bad);
    }
  });

  it('takes the bare base64 as the same key as whsec_ (as the standardwebhooks package does)', () => {
    expect(webhookSecretProblem(VAR, { [VAR]: SECRET.slice(6) })).toBeUndefined();
    expect(webhookSecretProblem(VAR, { [VAR]: SECRET })).toBeUndefined();
  });

  it('reports each wrong field with its path and line', () => {
    expect(
      problems(
        [
          '  webhooks:',
          '    - url: ftp://hooks.example.com/',
          '      events: [request.completed, request.exploded]',
          '      secret_env: "not a name"',
          '    - events: []',
          `      secret_env: ${VAR}`,
          '    - url: https://user:pw@hooks.example.com/',
          `      secret_env: ${VAR}`,
          '      allow_request_urls: [https://ok.example.com/a/, "https://x.example.com/b?c=d"]',
          `    - secret_env: ${VAR}`,
          '      colour: blue',
        ].join('\n'),
      ),
    ).toEqual([
      'a.yaml:9: spec.webhooks.0.url: must be an absolute http:// or https:// URL (got the string "ftp://hooks.example.com/")',
      `a.yaml:10: spec.webhooks.0.events: item 1 must be one of ${WEBHOOK_EVENTS.join(', ')} (got the string "request.exploded")`,
      'a.yaml:11: spec.webhooks.0.secret_env: must be the name of an environment variable (got the string "not a name")',
      'a.yaml:12: spec.webhooks.1.url: is required unless allow_request_urls is given (the URL every event is POSTed to)',
      `a.yaml:12: spec.webhooks.1.events: must list at least one event (leave it out for all: ${WEBHOOK_EVENTS.join(', ')})`,
      'a.yaml:14: spec.webhooks.2.url: must not hold a user name or password (got the string "https://user:pw@hooks.example.com/")',
      'a.yaml:16: spec.webhooks.2.allow_request_urls: item 1 must be a scheme, host and path, without ? or # (got the string "https://x.example.com/b?c=d")',
      'a.yaml:17: spec.webhooks.3.url: is required unless allow_request_urls is given (the URL every event is POSTed to)',
      'a.yaml:18: spec.webhooks.3.colour: unknown field (allowed here: url, events, secret_env, allow_request_urls)',
    ]);
  });
});
