import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { WebhookSecret } from '../../agents/config/webhooks.schema';
import { signWebhook } from './webhook-signer.util';

const KEY = Buffer.alloc(32, 0x5a);
const SECRET = `whsec_${KEY.toString('base64')}`;

describe('signWebhook', () => {
  const body = JSON.stringify({ type: 'request.completed', data: { request_id: 'r1', text: 'héllo' } });

  it('signs as the Standard Webhooks specification says: v1, HMAC-SHA256 of "{id}.{timestamp}.{body}", base64', () => {
    const at = new Date('2026-11-28T04:00:00.750Z');
    const headers = signWebhook(new WebhookSecret('S', SECRET), 'msg_1', body, at);
    const expected = createHmac('sha256', KEY)
      .update(`msg_1.${Math.floor(at.getTime() / 1000)}.${body}`)
      .digest('base64');
    expect(headers).toEqual({ 'webhook-id': 'msg_1', 'webhook-timestamp': '1795838400', 'webhook-signature': `v1,${expected}` });
  });

  it("verifies with the package's own verifier, given the whsec_ secret or its bare base64", () => {
    const headers = signWebhook(new WebhookSecret('S', SECRET), 'msg_2', body);
    expect(new Webhook(SECRET).verify(body, { ...headers })).toEqual(JSON.parse(body));
    const bare = signWebhook(new WebhookSecret('S', KEY.toString('base64')), 'msg_2', body);
    expect(new Webhook(SECRET).verify(body, { ...bare })).toEqual(JSON.parse(body));
  });

  it('does not verify under another secret or with a changed body', () => {
    const headers = signWebhook(new WebhookSecret('S', SECRET), 'msg_3', body);
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(body, { ...headers })).toThrow('No matching signature found');
    expect(() => new Webhook(SECRET).verify(body.replace('r1', 'r2'), { ...headers })).toThrow('No matching signature found');
  });
});
