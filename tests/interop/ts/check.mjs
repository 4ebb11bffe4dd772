#!/usr/bin/env node
// Checks toolbelt-mcp through the official TypeScript SDK client (`Client` +
// `StdioClientTransport`, the client stack of Claude Code, Claude Desktop and VS Code): a tool
// call, then the prompts (each built from the workspace's state) and completions.
//
//   npm ci --prefix tests/interop/ts && node tests/interop/ts/check.mjs BINARY
//
// Prints PASS/FAIL per check; exits 1 on any failure.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { mkdtempSync, mkdirSync, rmSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const binary = process.argv[2];
if (!binary) {
  console.error('usage: node check.mjs BINARY');
  process.exit(2);
}
let failed = 0;
let passed = 0;
function check(name, ok, detail = '') {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${ok ? '' : `: ${String(detail).slice(0, 400)}`}`);
}

const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'toolbelt-ts-check-')));
const root = join(tmp, 'ws');
mkdirSync(root);
const transport = new StdioClientTransport({
  command: resolve(binary),
  args: ['serve', '--root', root],
  env: { ...getDefaultEnvironment(), XDG_STATE_HOME: join(tmp, 'state'), XDG_CONFIG_HOME: join(tmp, 'config') },
  stderr: 'inherit',
});
const client = new Client({ name: 'toolbelt-ts-check', version: '1.0.0' });
try {
  await client.connect(transport);
  const caps = client.getServerCapabilities() ?? {};
  check('initialize: prompts and completions declared', caps.prompts !== undefined && caps.completions !== undefined, JSON.stringify(caps));
  const made = await client.callTool({ name: 'file_operations', arguments: { operation: 'create_file', path: 'ts-made.txt', content: 'from the ts sdk\n' } });
  check('tools/call create_file', !made.isError, JSON.stringify(made));
  await client.callTool({ name: 'todo_operations', arguments: { operation: 'write', list: 'sprint', todos: [{ title: 'Write the parser' }] } });
  const { prompts } = await client.listPrompts();
  check('prompts/list', prompts.map((p) => p.name).join(',') === 'review_changes,plan,recall', JSON.stringify(prompts));
  const review = await client.getPrompt({ name: 'review_changes', arguments: {} });
  const reviewText = review.messages[0]?.content?.text ?? '';
  check('prompts/get review_changes: the diff of this session', reviewText.includes('ts-made.txt') && reviewText.includes('+from the ts sdk'), reviewText);
  const plan = await client.getPrompt({ name: 'plan', arguments: { task: 'Parse the config', list: 'sprint' } });
  const planText = plan.messages[0]?.content?.text ?? '';
  check('prompts/get plan: the task and the list', planText.includes('Parse the config') && planText.includes('Write the parser'), planText);
  const lists = await client.complete({ ref: { type: 'ref/prompt', name: 'plan' }, argument: { name: 'list', value: 'sp' } });
  check('completion/complete plan.list', JSON.stringify(lists.completion.values) === '["sprint"]', JSON.stringify(lists));
  const templates = await client.complete({ ref: { type: 'ref/resource', uri: 'todo://{list}' }, argument: { name: 'list', value: '' } });
  check('completion/complete todo://{list}', JSON.stringify(templates.completion.values) === '["default","sprint"]', JSON.stringify(templates));
  let refused = '';
  try {
    await client.getPrompt({ name: 'plan', arguments: {} });
  } catch (err) {
    refused = String(err.message ?? err);
  }
  check('prompts/get plan without its task: an error naming the argument', refused.includes('`task`'), refused);
} catch (err) {
  check('the TypeScript SDK session', false, err?.stack ?? err);
} finally {
  await client.close().catch(() => {});
  rmSync(tmp, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
