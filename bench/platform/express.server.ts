import express from 'express';
import { PAYLOAD } from './payload';

/** Express alone (the version ours runs on): one GET route answering PAYLOAD with res.json, ETag off as ours. Prints its port. */
const app = express();
app.set('etag', false);
app.set('x-powered-by', false);
app.get('/x', (_req, res) => void res.json(PAYLOAD));
const server = app.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
