import { createHash, createHmac, Hash, Hmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';

/** The hash the AWS SDK's signer takes: SHA-256, or HMAC-SHA256 when given a secret. */
class NodeSha256 {
  private readonly hash: Hash | Hmac;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    const key = secret === undefined || typeof secret === 'string' ? secret : bytes(secret);
    this.hash = key === undefined ? createHash('sha256') : createHmac('sha256', key);
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(typeof data === 'string' ? data : bytes(data));
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(this.hash.digest());
  }
}

function bytes(data: ArrayBuffer | ArrayBufferView): Buffer {
  return ArrayBuffer.isView(data) ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.from(data);
}

/**
 * The AWS SDK's Signature Version 4 signer (@smithy/signature-v4) for DynamoDB: the oracle our
 * signer (src/state/backends/dynamodb/aws-sigv4.ts) is checked against. Without
 * x-amz-content-sha256: only S3 requires it (the SDK's DynamoDB client adds it, one header more to
 * sign and send).
 */
export function sdkSigner(credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string }, region: string): SignatureV4 {
  return new SignatureV4({ credentials, region, service: 'dynamodb', sha256: NodeSha256, applyChecksum: false });
}
