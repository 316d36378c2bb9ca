import { request as httpRequest } from 'node:http';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/**
 * A POST whose headers are exactly the ones given, as python `requests.post(url, data=text)` sends
 * it: `fetch` would add `Content-Type: text/plain` to a string body, which is the very thing the
 * tests of "no Content-Type" must not send. Only `Content-Length` (and Host) are added.
 */
export function rawPost(url: string, text: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  const body = Buffer.from(text, 'utf8');
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { ...headers, 'content-length': String(body.length) } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const out = Buffer.concat(parts).toString('utf8');
        let parsed: unknown;
        try {
          parsed = out ? JSON.parse(out) : undefined;
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: out, body: parsed });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
