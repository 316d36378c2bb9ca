import { WEBHOOK_EVENTS, WebhookSecret, WebhookTarget } from '../../agents/config/webhooks.schema';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { requestWebhookDestination } from './webhook-url.policy';

const hooks = new WebhookSecret('HOOKS_SECRET', 'whsec_aG9va3M=');
const deep = new WebhookSecret('DEEP_SECRET', 'whsec_ZGVlcA==');
const targets: WebhookTarget[] = [
  { url: 'https://static.example.com/all', events: [...WEBHOOK_EVENTS], secret: new WebhookSecret('STATIC', 'x'), allowRequestUrls: [] },
  { events: ['request.completed'], secret: hooks, allowRequestUrls: ['https://hooks.example.com/hooks', 'http://bots.example.com:8080/'] },
  { events: ['approval.required'], secret: deep, allowRequestUrls: ['https://hooks.example.com/hooks/deep/'] },
];

function refusal(url: unknown, from: readonly WebhookTarget[] = targets): string {
  try {
    requestWebhookDestination(from, url);
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    const error = e as DomainError;
    expect(error.code).toBe(ErrorCode.VALIDATION_FAILED);
    expect(error.errors).toEqual([{ field: 'webhook_url', message: error.message }]);
    return error.message;
  }
  throw new Error(`accepted ${String(url)}`);
}

const NOT_UNDER = "is not under one of this agent's allowed webhook URLs (spec.webhooks[].allow_request_urls)";

describe('requestWebhookDestination', () => {
  it.each([
    ['https://hooks.example.com/hooks', 'https://hooks.example.com/hooks'],
    ['https://hooks.example.com/hooks/', 'https://hooks.example.com/hooks/'],
    ['https://hooks.example.com/hooks/a/b?x=1#frag', 'https://hooks.example.com/hooks/a/b?x=1'],
    ['HTTPS://HOOKS.Example.COM:443/hooks/a', 'https://hooks.example.com/hooks/a'],
    ['https://hooks.example.com/other/../hooks/a', 'https://hooks.example.com/hooks/a'],
    ['http://bots.example.com:8080/anything', 'http://bots.example.com:8080/anything'],
  ])('accepts %s (as %s), signed with the matching entry', (given, url) => {
    expect(requestWebhookDestination(targets, given)).toEqual({ url, events: ['request.completed'], secret: hooks });
  });

  it('picks the longest matching prefix: its secret and its events', () => {
    expect(requestWebhookDestination(targets, 'https://hooks.example.com/hooks/deep/x')).toEqual({
      url: 'https://hooks.example.com/hooks/deep/x',
      events: ['approval.required'],
      secret: deep,
    });
    // `/hooks/deep` itself is not under `/hooks/deep/`: the shorter prefix takes it.
    expect(requestWebhookDestination(targets, 'https://hooks.example.com/hooks/deep').secret).toBe(hooks);
  });

  it.each([
    ['another host that starts with the allowed one', 'https://hooks.example.com.evil.io/hooks/a'],
    ['a backslash before @', 'https://hooks.example.com\\@evil.io/hooks/a'],
    ['.. out of the prefix', 'https://hooks.example.com/hooks/../admin'],
    ['encoded .. out of the prefix', 'https://hooks.example.com/hooks/%2e%2e/admin'],
    ['a path that only starts with the prefix text', 'https://hooks.example.com/hooksevil'],
    ['another scheme', 'http://hooks.example.com/hooks/a'],
    ['another port', 'https://hooks.example.com:8443/hooks/a'],
    ['the default port of the other scheme', 'http://bots.example.com/anything'],
    ['a trailing dot on the host', 'https://hooks.example.com./hooks/a'],
  ])('refuses %s: %s', (_what, url) => {
    expect(refusal(url)).toBe(NOT_UNDER);
  });

  it.each([
    ['not a URL', 'hooks.example.com/hooks', 'must be an absolute http:// or https:// URL'],
    ['not a string', 42, 'must be an absolute http:// or https:// URL'],
    ['another scheme', 'ftp://hooks.example.com/hooks', 'must be an absolute http:// or https:// URL'],
    ['javascript:', 'javascript:alert(1)', 'must be an absolute http:// or https:// URL'],
    ['credentials', 'https://me:pw@hooks.example.com/hooks/a', 'must not hold a user name or password'],
    ['userinfo that reads as the allowed host', 'https://hooks.example.com@evil.io/hooks/a', 'must not hold a user name or password'],
    ['an encoded slash', 'https://hooks.example.com/hooks/..%2fadmin', 'must not hold an encoded / or \\ in its path'],
    ['a URL over 2048 characters', `https://hooks.example.com/hooks/${'a'.repeat(2048)}`, 'must be at most 2048 characters'],
    ['an encoded backslash', 'https://hooks.example.com/hooks/..%5Cadmin', 'must not hold an encoded / or \\ in its path'],
  ])('refuses %s', (_what, url, message) => {
    expect(refusal(url)).toBe(message);
  });

  it('says so when the agent allows no request URLs at all', () => {
    expect(refusal('https://static.example.com/all', targets.slice(0, 1))).toBe(
      'is not accepted by this agent (it allows no request webhook URLs: spec.webhooks[].allow_request_urls)',
    );
    expect(refusal('https://static.example.com/all', [])).toMatch(/^is not accepted by this agent/);
  });

  it('names the field it is given', () => {
    expect(() => requestWebhookDestination(targets, 'x', 'body.webhook_url')).toThrow(
      expect.objectContaining({ errors: [{ field: 'body.webhook_url', message: 'must be an absolute http:// or https:// URL' }] }),
    );
  });
});
