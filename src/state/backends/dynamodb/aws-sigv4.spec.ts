import { sdkSigner } from '../../../../test/support/aws-sdk-signer';
import { signRequest } from './aws-sigv4';

const AT = new Date('2026-11-29T12:34:56.789Z');

/** The AWS SDK's signature of the same request (its signer, @smithy/signature-v4), as the oracle. */
async function sdkSigned(
  request: { path: string; headers: Record<string, string>; body: string },
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string },
  region: string,
): Promise<Record<string, string>> {
  const signer = sdkSigner(credentials, region);
  const [hostname, port] = request.headers.host!.split(':');
  const signed = await signer.sign(
    {
      method: 'POST',
      protocol: 'http:',
      hostname: hostname!,
      port: port ? Number(port) : undefined,
      path: request.path,
      query: {},
      headers: { ...request.headers },
      body: request.body,
    },
    { signingDate: AT },
  );
  return signed.headers;
}

describe('signRequest (AWS Signature Version 4)', () => {
  const body = JSON.stringify({ TableName: 't', Key: { pk: { S: 'T#a#b' }, sk: { S: '#' } }, ConsistentRead: true });
  const headers = { host: '127.0.0.1:8000', 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.GetItem' };

  it.each([
    ['long-term keys', { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' }, 'us-east-1'],
    [
      'temporary credentials (a session token, signed and sent)',
      { accessKeyId: 'ASIAEXAMPLE', secretAccessKey: 'secret', sessionToken: 'token/with+chars==' },
      'eu-west-1',
    ],
  ])('signs as the AWS SDK signs: %s', async (_name, credentials, region) => {
    const ours = signRequest({ method: 'POST', path: '/', headers, body }, credentials, { region, service: 'dynamodb' }, AT);
    const sdk = await sdkSigned({ path: '/', headers, body }, credentials, region);
    expect(ours.Authorization).toBe(sdk.authorization);
    expect(ours['X-Amz-Date']).toBe(sdk['x-amz-date']);
    expect(ours['X-Amz-Security-Token']).toBe(sdk['x-amz-security-token']);
  });

  it('the signature covers the body, the target and the day: a change to any gives another', () => {
    const credentials = { accessKeyId: 'AKID', secretAccessKey: 'secret' };
    const sign = (b: string, h: Record<string, string>, at: Date) =>
      signRequest({ method: 'POST', path: '/', headers: h, body: b }, credentials, { region: 'us-east-1', service: 'dynamodb' }, at).Authorization;
    const base = sign(body, headers, AT);
    expect(sign(body + ' ', headers, AT)).not.toBe(base);
    expect(sign(body, { ...headers, 'x-amz-target': 'DynamoDB_20120810.PutItem' }, AT)).not.toBe(base);
    expect(sign(body, headers, new Date(AT.getTime() + 86_400_000))).not.toBe(base);
    expect(sign(body, headers, AT)).toBe(base);
  });

  it("matches AWS's published post-vanilla example", () => {
    const signed = signRequest(
      { method: 'POST', path: '/', headers: { host: 'example.amazonaws.com' }, body: '' },
      { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
      { region: 'us-east-1', service: 'service' },
      new Date('2015-08-30T12:36:00Z'),
    );
    expect(signed.Authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b',
    );
  });
});
