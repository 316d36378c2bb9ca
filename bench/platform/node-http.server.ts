import { createServer } from 'node:http';
import { PAYLOAD } from './payload';

/** The floor of a JSON GET: node:http answering every request with PAYLOAD. Prints its port. */
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const json = JSON.stringify(PAYLOAD);
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) });
    res.end(json);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
