import * as assert from 'node:assert/strict';
import { RunRecord } from '../../src/storage/runRecord';

describe('a run record read back from disk (unit)', () => {
  it('keeps how many connections an entry of the network record stands for', () => {
    const entry = { time: 1, host: 'api.example.com', port: 443, method: 'CONNECT', allowed: true, bytesOut: 10, bytesIn: 20, count: 1201 };
    const parsed = RunRecord.shape.network.unwrap().parse({ connections: [entry, { ...entry, host: 'last.example', count: undefined }], complete: true });
    assert.deepEqual(
      parsed.connections.map((c) => [c.host, c.count]),
      [
        ['api.example.com', 1201],
        ['last.example', undefined],
      ],
    );
    assert.equal(RunRecord.shape.network.unwrap().safeParse({ connections: [{ ...entry, count: 0 }], complete: true }).success, false);
  });
});
