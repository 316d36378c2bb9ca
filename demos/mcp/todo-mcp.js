// `npm run demo:todo-mcp`: checks the Node version, then starts the to-do MCP server
// (todo-mcp.server.ts). The check needs this plain-JS step: an older Node cannot even parse the
// TypeScript, so it would fail there with a stack trace instead of saying which Node to use.
import { createRequire } from 'node:module';

createRequire(import.meta.url)('../../bin/node-version.js').requireNode('demo:todo-mcp');
const { runTodoMcpServer } = await import('./todo-mcp.server.ts');
runTodoMcpServer();
