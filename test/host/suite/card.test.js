// The run card in the real VS Code: with codeactSandbox.runCard on, execute_code reaches the model
// through the extension's own MCP server and each run shows as an MCP App inline in the chat;
// the plain tool is hidden meanwhile, and comes back when MCP Apps are turned off.
const assert = require('node:assert/strict');
const vscode = require('vscode');
const h = require('./helpers');

const MODEL_EXTENSION = 'codeact-sandbox-test.scripted-model';
const CHART = [
  'import csv',
  'import matplotlib',
  "matplotlib.use('Agg')",
  'import matplotlib.pyplot as plt',
  'rows = [(m, 100 + 7 * m) for m in range(1, 13)]',
  "with open('monthly.csv', 'w', newline='') as f:",
  '    w = csv.writer(f)',
  "    w.writerow(['month', 'revenue'])",
  '    w.writerows(rows)',
  'fig, ax = plt.subplots(figsize=(6, 3), dpi=100)',
  "ax.bar([m for m, _ in rows], [r for _, r in rows], color='steelblue')",
  "fig.savefig('chart.png')",
  "print('best month: 12')",
].join('\n');
const CARD_TEXT = "stdout:\nbest month: 12\n\nSaved for the user in the CodeAct Sandbox view: chart.png";

describe('the run card in the chat (host)', function () {
  let api;
  let model;
  const ask = (query) =>
    vscode.commands.executeCommand('workbench.action.chat.open', { mode: 'agent', modelSelector: model.selector, query, blockOnResponse: true });
  /** The card's tool as VS Code lists it (an MCP tool's name carries its server's), and whether the plain one is listed. */
  const tools = () => ({
    card: vscode.lm.tools.find((t) => t.name !== 'execute_code' && t.name.endsWith('execute_code')),
    plain: vscode.lm.tools.some((t) => t.name === 'execute_code'),
  });
  const ownResults = () => model.requests.flatMap((r) => r.toolResults).filter((p, i, all) => all.findIndex((q) => q.callId === p.callId) === i && String(p.callId).startsWith('codeact-card-'));

  before(async function () {
    this.timeout(50 * 60_000); // on a fresh machine the data image is built (minutes), when the agent suite did not
    api = await h.activate();
    // The default image, with matplotlib: prepared by the extension's own command (at once when it is there).
    await h.setting('image', undefined);
    await vscode.commands.executeCommand('codeactSandbox.prepareImage');
    model = await vscode.extensions.getExtension(MODEL_EXTENSION).activate();
    await h.waitFor(async () => (await vscode.lm.selectChatModels(model.selector)).length, 20000, 'the scripted model');
    if (!vscode.extensions.getExtension('GitHub.copilot-chat')) await vscode.commands.executeCommand('workbench.extensions.action.enableAll');
    const copilot = await h.waitFor(() => vscode.extensions.getExtension('GitHub.copilot-chat'), 20000, 'Copilot Chat enabled');
    await h.waitFor(() => copilot.isActive, 60000, 'Copilot Chat active');
    model.reset();
  });

  after(async function () {
    model && model.reset();
    await h.setting('runCard', false);
    await h.setting('image', h.IMAGE);
    await vscode.workspace.getConfiguration('chat.mcp.apps').update('enabled', undefined, vscode.ConfigurationTarget.Global);
  });

  it("shows the run as a card in the chat, with the chart and the table's rows; the model gets the plain tool's text", async function () {
    this.timeout(300_000);
    await h.setting('runCard', true);
    // The card's tool comes with the extension's MCP server, which VS Code starts for the chat's
    // next request (chat.mcp.autostart); the plain tool is not offered beside it (its `when`).
    let offered;
    model.script((request, fallback) => {
      if (request.toolResults.some((r) => String(r.callId).startsWith('codeact-card-'))) return fallback(request);
      offered = request.tools;
      const name = request.tools.find((t) => t !== 'execute_code' && t.endsWith('execute_code'));
      return name ? { toolCall: { name, input: { code: CHART, outputs: ['chart.png', 'monthly.csv'] }, callId: 'codeact-card-1' } } : { text: `no card tool among ${request.tools.join(', ')}` };
    });
    await vscode.commands.executeCommand('workbench.action.chat.newChat');
    await h.sleep(300);
    let res = await ask('Chart the monthly revenue and tell me the best month.');
    // VS Code asks before an MCP tool runs, unless the person allowed it: allowed here, once.
    if (res && res.type === 'confirmation') {
      await h.snapshot('run-card-confirmation');
      await vscode.commands.executeCommand('workbench.action.chat.acceptTool');
      res = await h.waitFor(() => (ownResults().length ? ownResults() : undefined), 120000, 'the card call to end');
    }
    const [result] = ownResults();
    assert.ok(result, `the tool result reached the model (tools offered: ${JSON.stringify(offered)}, answer: ${JSON.stringify(res)})`);
    assert.ok(!offered.includes('execute_code'), 'the plain tool is not offered beside the card');
    const text = result.content.find((p) => p.type === 'text').value;
    assert.ok(text.startsWith(CARD_TEXT), text);
    // The chat VS Code named with the call is the same chat the plain tool's token names.
    const chats = api.sandboxes().filter((s) => s.sessionKey.startsWith('chat:vscode-chat-session://local/'));
    const conversation = model.requests.find((r) => r.toolResults.length)?.conversationId;
    assert.ok(
      chats.some((s) => Buffer.from(s.sessionKey.split('/').pop(), 'base64url').toString('utf8') === conversation),
      JSON.stringify({ keys: chats.map((s) => s.sessionKey), conversation }),
    );
    // The card itself, in the chat's webview.
    const head = await h.waitFor(async () => {
      const found = await h.query('.head .title', '.head');
      return found.some((e) => /^Finished in /.test(e.text)) ? found : undefined;
    }, 60000, 'the card to finish');
    assert.ok(head.some((e) => /^Finished in \d/.test(e.text)), JSON.stringify(head));
    const images = await h.waitFor(async () => {
      const found = await h.query('figure.image img', '.head');
      return found.some((i) => i.naturalWidth === 600) ? found : undefined;
    }, 30000, 'the chart in the card');
    assert.deepEqual(images.map((i) => [i.alt, i.naturalWidth]), [['chart.png', 600]]);
    const rows = await h.waitFor(async () => {
      const found = await h.query('table tbody tr', '.head');
      return found.length === 12 ? found : undefined;
    }, 30000, "the table's rows in the card");
    assert.deepEqual([rows[0].text, rows[11].text], ['1107', '12184']);
    await h.snapshot('run-card-table');
    await h.query('.head', '.head', true);
    await h.snapshot('run-card');
  });

  it('with MCP Apps turned off, the plain tool is back and does the same job', async function () {
    this.timeout(300_000);
    await vscode.workspace.getConfiguration('chat.mcp.apps').update('enabled', false, vscode.ConfigurationTarget.Global);
    await h.waitFor(() => (tools().plain && !tools().card ? true : undefined), 60000, 'the plain tool in place of the card');
    model.script((request, fallback) =>
      request.toolResults.some((r) => String(r.callId).startsWith('codeact-card-'))
        ? fallback(request)
        : { toolCall: { name: 'execute_code', input: { code: CHART, outputs: ['chart.png', 'monthly.csv'] }, callId: 'codeact-card-2' } },
    );
    await vscode.commands.executeCommand('workbench.action.chat.newChat');
    await h.sleep(300);
    const res = await ask('Chart the monthly revenue again.');
    assert.ok(res && res.type !== 'confirmation', JSON.stringify(res));
    const result = ownResults().find((r) => r.callId === 'codeact-card-2');
    assert.ok(result, 'the plain tool answered');
    assert.ok(result.content.find((p) => p.type === 'text').value.startsWith(CARD_TEXT));
  });
});
