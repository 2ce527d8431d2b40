// Mocha's spec reporter, and at the end each test file's wall time (its hooks included) and its
// share of the run: where a stage's minutes go, so the suites can be kept lean. Plain CommonJS so
// that mocha loads it before tsx is registered.
'use strict';
const Mocha = require('mocha');
const path = require('path');

const { EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_RUN_BEGIN, EVENT_RUN_END, EVENT_TEST_PASS } = Mocha.Runner.constants;

class TimedSpec extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    /** @type {Map<string, { ms: number, tests: number }>} */
    const files = new Map();
    const started = new Map();
    let runStarted = 0;
    const fileOf = (suite) => (suite.file ? path.relative(process.cwd(), suite.file) : undefined);
    const entryOf = (file) => {
      if (!files.has(file)) files.set(file, { ms: 0, tests: 0 });
      return files.get(file);
    };
    runner.once(EVENT_RUN_BEGIN, () => { runStarted = Date.now(); });
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.parent && suite.parent.root && fileOf(suite)) started.set(suite, Date.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      const began = started.get(suite);
      if (began === undefined) return;
      started.delete(suite);
      entryOf(fileOf(suite)).ms += Date.now() - began;
    });
    runner.on(EVENT_TEST_PASS, (test) => {
      let suite = test.parent;
      while (suite && suite.parent && !suite.parent.root) suite = suite.parent;
      const file = suite && fileOf(suite);
      if (file) entryOf(file).tests += 1;
    });
    runner.once(EVENT_RUN_END, () => {
      if (files.size < 2) return;
      const all = Date.now() - runStarted;
      const rows = [...files].sort((a, b) => b[1].ms - a[1].ms);
      process.stdout.write('\n  time per file (s, tests passed, share of the run)\n');
      for (const [file, { ms, tests }] of rows) {
        const share = all > 0 ? Math.round((100 * ms) / all) : 0;
        process.stdout.write(`  ${(ms / 1000).toFixed(1).padStart(7)} ${String(tests).padStart(4)} ${String(share).padStart(3)}%  ${file}\n`);
      }
      process.stdout.write(`  ${(all / 1000).toFixed(1).padStart(7)}            in all\n`);
    });
  }
}

module.exports = TimedSpec;
