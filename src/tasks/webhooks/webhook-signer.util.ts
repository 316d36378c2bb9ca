import { Webhook } from 'standardwebhooks';
import type { WebhookSecret } from '../../agents/config/webhooks.schema';

/** The three headers of the Standard Webhooks specification. */
export interface WebhookSignatureHeaders {
  'webhook-id': string;
  /** Unix seconds. */
  'webhook-timestamp': string;
  /** `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`. */
  'webhook-signature': string;
}

/**
 * Signs one attempt. `id` is the event's, the same on every attempt so that receivers de-duplicate;
 * the timestamp is the attempt's, since receivers refuse one older than their tolerance (the
 * package's verifier: 5 minutes) and a retry hours later must still verify. `body` is the exact
 * text sent: the signature covers its bytes, so it is never re-serialised after signing.
 */
export function signWebhook(secret: WebhookSecret, id: string, body: string, at: Date = new Date()): WebhookSignatureHeaders {
  // The package reads `whsec_<base64>` and bare base64 alike (spec.webhooks validated the value at boot).
  const signature = new Webhook(secret.reveal()).sign(id, at, body);
  return { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature };
}
