import { createHmac, createSecretKey, hash, KeyObject } from 'node:crypto';

/** An AWS key pair (and the session token of temporary credentials). */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** When temporary credentials stop working; resolved again before then (aws-credentials.ts). */
  expiration?: Date;
}

/**
 * Signature Version 4 of one request without a query string (every DynamoDB call), its `path`
 * as a URL gives it (already escaped):
 * the headers to send besides `headers` (`X-Amz-Date`, `X-Amz-Security-Token` for temporary
 * credentials, `Authorization`). Every header in `headers` is signed, and `host` must be one of
 * them. The day's signing key is derived once per key, day, region and service (four HMACs) and
 * kept as a KeyObject (an HMAC keyed with bytes prepares the key anew each time: ~15 µs against
 * ~2); a request then costs two one-shot SHA-256 and one HMAC. The AWS SDK's signer computes the same
 * (aws-sigv4.spec.ts compares the two).
 */
export function signRequest(
  request: { method: string; path: string; headers: Record<string, string>; body: string | Buffer },
  credentials: AwsCredentials,
  scope: { region: string; service: string },
  at: Date = new Date(),
): Record<string, string> {
  const amzDate = at.toISOString().replace(/[-:]|\.\d{3}/g, '');
  const day = amzDate.slice(0, 8);
  const added: Record<string, string> = { 'x-amz-date': amzDate };
  if (credentials.sessionToken) added['x-amz-security-token'] = credentials.sessionToken;
  const lines = new Map<string, string>();
  for (const name in request.headers) lines.set(name.toLowerCase(), request.headers[name]!.trim().replace(/\s+/g, ' '));
  for (const name in added) lines.set(name, added[name]!);
  const names = [...lines.keys()].sort();
  const signedHeaders = names.join(';');
  const canonical = [
    request.method,
    request.path,
    '',
    names.map((n) => `${n}:${lines.get(n)}\n`).join(''),
    signedHeaders,
    hash('sha256', request.body, 'hex'),
  ].join('\n');
  const credentialScope = `${day}/${scope.region}/${scope.service}/aws4_request`;
  const toSign = `AWS4-HMAC-SHA256\n${amzDate}\n${credentialScope}\n${hash('sha256', canonical, 'hex')}`;
  const signature = createHmac('sha256', signingKey(credentials.secretAccessKey, day, scope))
    .update(toSign)
    .digest('hex');
  return {
    'X-Amz-Date': amzDate,
    ...(credentials.sessionToken ? { 'X-Amz-Security-Token': credentials.sessionToken } : {}),
    Authorization: `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${credentialScope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
  };
}

/** The last signing key derived: one key pair, one region and service, a new one each UTC day. */
let lastKey: { id: string; key: KeyObject } | undefined;

function signingKey(secret: string, day: string, scope: { region: string; service: string }): KeyObject {
  const id = `${day}/${scope.region}/${scope.service}/${secret}`;
  if (lastKey?.id === id) return lastKey.key;
  const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
  const key = createSecretKey(hmac(hmac(hmac(hmac(`AWS4${secret}`, day), scope.region), scope.service), 'aws4_request'));
  lastKey = { id, key };
  return key;
}
