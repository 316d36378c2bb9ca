import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { PROBLEM_CONTENT_TYPE, ProblemDetails } from '../../common/errors/problem-details';

/**
 * Answers an upgrade request with an ordinary HTTP error instead of switching protocols: the same
 * problem+json body and headers (`WWW-Authenticate`, `Retry-After`, `X-Request-Id`) the HTTP routes
 * send, written on the raw socket because no Express response exists for an upgrade. The socket is
 * closed once the answer is out. Header values are ours (fixed phrases, ids, numbers), never the
 * caller's.
 */
export function refuseUpgrade(socket: Duplex, problem: ProblemDetails, headers: Record<string, string>): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(problem);
  const head = [
    `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? ''}`,
    'Connection: close',
    `Content-Type: ${PROBLEM_CONTENT_TYPE}; charset=utf-8`,
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  socket.once('finish', () => socket.destroy());
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
}
