#!/usr/bin/env node
// Checks toolbelt-mcp through the official TypeScript SDK client (`Client` +
// `StdioClientTransport`, the client stack of Claude Code, Claude Desktop and VS Code): a tool
// call, then the prompts (each built from the workspace's state) and completions, and
// `run_command` as a task of protocol 2025-11-25 (`client.experimental.tasks`): created at once,
// streamed to its result, listed, and a long one cancelled. Then `delegate` as a task from a
// client that samples with tools: its sub-agent's turns come as `sampling/createMessage`, its
// edit lands, the task's result has its answer.
//
//   npm ci --prefix tests/interop/ts && node tests/interop/ts/check.mjs BINARY
//
// Prints PASS/FAIL per check; exits 1 on any failure.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, realpathSync, writeFileSync } from 'node:fs';
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

  const taskCaps = client.getServerCapabilities()?.tasks;
  check('initialize: tasks declared for tools/call', taskCaps?.requests?.tools?.call !== undefined, JSON.stringify(taskCaps));
  const { tools } = await client.listTools();
  const terminal = tools.find((t) => t.name === 'terminal_operations');
  check('tools/list: terminal_operations may run as a task', terminal?.execution?.taskSupport === 'optional', JSON.stringify(terminal?.execution));
  const seen = [];
  let streamed;
  const stream = client.experimental.tasks.callToolStream(
    { name: 'terminal_operations', arguments: { operation: 'run_command', command: 'sleep 1; echo ts-task' } },
    undefined,
    { task: { ttl: 60000 } },
  );
  for await (const message of stream) {
    seen.push(message.type === 'taskStatus' ? `status:${message.task.status}` : message.type);
    if (message.type === 'taskCreated') streamed = message.task.taskId;
    if (message.type === 'result') {
      const text = message.result.content.map((c) => c.text ?? '').join('');
      check('a task streams to its result', text.includes('ts-task') && !message.result.isError, text);
    }
    if (message.type === 'error') check('a task streams to its result', false, message.error);
  }
  check('the stream: created, working, completed, result', seen[0] === 'taskCreated' && seen.includes('status:completed') && seen.at(-1) === 'result', seen.join(' '));
  const listed = await client.experimental.tasks.listTasks();
  check('tasks/list lists it', listed.tasks.some((t) => t.taskId === streamed && t.status === 'completed'), JSON.stringify(listed));
  const long = client.experimental.tasks.callToolStream(
    { name: 'terminal_operations', arguments: { operation: 'run_command', command: 'sleep 60; echo late > ts-late.txt' } },
    undefined,
    { task: { ttl: 60000 } },
  );
  const first = await long.next();
  const longId = first.value?.task?.taskId;
  const cancelled = await client.experimental.tasks.cancelTask(longId);
  check('tasks/cancel ends a long task', cancelled.status === 'cancelled', JSON.stringify(cancelled));
  await long.return?.();
  await new Promise((done) => setTimeout(done, 500));
  check('the cancelled command did not go on', !existsSync(join(root, 'ts-late.txt')));
} catch (err) {
  check('the TypeScript SDK session', false, err?.stack ?? err);
} finally {
  await client.close().catch(() => {});
}

// `delegate` as a task, its model the client's own (sampling with tools).
const sampler = new Client({ name: 'toolbelt-ts-sampler', version: '1.0.0' }, { capabilities: { sampling: { tools: {} } } });
const asked = [];
const replies = [
  { role: 'assistant', model: 'ts-script', stopReason: 'toolUse', content: [{ type: 'tool_use', id: 'u1', name: 'file_operations', input: { operation: 'replace_string', path: 'answer.txt', old_string: '41', new_string: '42' } }] },
  { role: 'assistant', model: 'ts-script', stopReason: 'endTurn', content: [{ type: 'text', text: 'Fixed by the TypeScript client.' }] },
];
sampler.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  asked.push(request.params);
  return replies.shift() ?? { role: 'assistant', model: 'ts-script', content: { type: 'text', text: '(no more)' } };
});
try {
  writeFileSync(join(root, 'answer.txt'), 'answer = 41\n');
  await sampler.connect(new StdioClientTransport({
    command: resolve(binary),
    args: ['serve', '--root', root],
    env: { ...getDefaultEnvironment(), XDG_STATE_HOME: join(tmp, 'state'), XDG_CONFIG_HOME: join(tmp, 'config') },
    stderr: 'inherit',
  }));
  const { tools } = await sampler.listTools();
  const operations = tools.find((t) => t.name === 'terminal_operations')?.inputSchema?.properties?.operation?.enum ?? [];
  check('tools/list: delegate for a client that samples with tools', operations.includes('delegate'), JSON.stringify(operations));
  const stream = sampler.experimental.tasks.callToolStream(
    { name: 'terminal_operations', arguments: { operation: 'delegate', task: 'Fix answer.txt: it must say 42.' } },
    undefined,
    { task: { ttl: 60000 } },
  );
  let answer = '';
  for await (const message of stream) {
    if (message.type === 'result') answer = message.result.content.map((c) => c.text ?? '').join('');
    if (message.type === 'error') answer = `error: ${JSON.stringify(message.error)}`;
  }
  check('delegate as a task: the sub-agent answers', answer.includes('Fixed by the TypeScript client.'), answer);
  check('delegate as a task: its edit landed', readFileSync(join(root, 'answer.txt'), 'utf8') === 'answer = 42\n');
  const tied = asked[1]?.messages?.at(-1)?.content;
  const blocks = Array.isArray(tied) ? tied : [tied];
  check('sampling: two turns, tools offered, the result tied to its use', asked.length === 2 && asked[0].tools?.length > 0 && blocks.some((b) => b?.type === 'tool_result' && b.toolUseId === 'u1'), JSON.stringify(asked).slice(0, 400));
} catch (err) {
  check('the TypeScript SDK sampling session', false, err?.stack ?? err);
} finally {
  await sampler.close().catch(() => {});
  rmSync(tmp, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
